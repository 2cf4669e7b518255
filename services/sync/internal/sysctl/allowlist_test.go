package sysctl

import (
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

func TestNewAllowlist(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		patterns []string
		wantErr  string
	}{
		{desc: "the safe sysctls", patterns: SafeSysctlAllowlist(version.MustParseGeneric("6.8"))},
		{desc: "namespaced names and prefixes", patterns: []string{"kernel.msgmax", "kernel.msg*", "kernel.shm*", "net.core.*", "net.*", "fs.mqueue.*", "kernel.sem"}},
		{desc: "slash separators", patterns: []string{"net/ipv4/conf/eth0.100/rp_filter", "net/ipv6/*"}},
		{desc: "not namespaced", patterns: []string{"kernel.panic"}, wantErr: `"kernel.panic" is not known to be namespaced`},
		{desc: "a prefix not namespaced", patterns: []string{"vm.*"}, wantErr: `"vm." is not known to be namespaced`},
		{desc: "everything", patterns: []string{"*"}, wantErr: "not known to be namespaced"},
		{desc: "upper case", patterns: []string{"Net.core.somaxconn"}, wantErr: "must have at most 253 characters"},
		{desc: "star inside", patterns: []string{"net.*.somaxconn"}, wantErr: "must have at most 253 characters"},
		{desc: "empty", patterns: []string{""}, wantErr: "must have at most 253 characters"},
		{desc: "too long", patterns: []string{"net." + strings.Repeat("a", 250)}, wantErr: "must have at most 253 characters"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := NewAllowlist(tc.patterns)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("NewAllowlist(%q) = %v", tc.patterns, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("NewAllowlist(%q) error = %v, want it to contain %q", tc.patterns, err, tc.wantErr)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	w, err := NewAllowlist(append(SafeSysctlAllowlist(version.MustParseGeneric("6.8")), "kernel.msg*", "net.core.somaxconn"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc             string
		sysctls          []string
		hostNet, hostIPC bool
		// wantErr is the message, "" to allow.
		wantErr string
	}{
		{desc: "no sysctls"},
		{desc: "safe sysctls", sysctls: []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_rmem"}},
		{desc: "a safe sysctl with slashes", sysctls: []string{"kernel/shm_rmid_forced"}},
		{desc: "an unsafe sysctl the operator allowed by pattern", sysctls: []string{"kernel.msgmax"}},
		{desc: "an unsafe sysctl the operator allowed by name", sysctls: []string{"net.core.somaxconn"}},
		{
			desc: "an unsafe sysctl not allowed: the kubelet's message", sysctls: []string{"kernel.shm_rmid_forced", "kernel.sem"},
			wantErr: `forbidden sysctl: "kernel.sem" not allowlisted`,
		},
		{
			desc: "a name is normalised before the message", sysctls: []string{"net/ipv4/ip_forward"},
			wantErr: `forbidden sysctl: "net.ipv4.ip_forward" not allowlisted`,
		},
		{
			desc: "a net sysctl of a host-network pod", sysctls: []string{"net.ipv4.ip_local_port_range"}, hostNet: true,
			wantErr: `forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host Net enabled`,
		},
		{
			desc: "an IPC sysctl of a host-IPC pod, allowed by pattern", sysctls: []string{"kernel.msgmax"}, hostIPC: true,
			wantErr: `forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled`,
		},
		{desc: "an IPC sysctl of a host-network pod", sysctls: []string{"kernel.shm_rmid_forced"}, hostNet: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: tc.hostNet, HostIPC: tc.hostIPC, SecurityContext: &v1.PodSecurityContext{}}}
			for _, name := range tc.sysctls {
				pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: name, Value: "1"})
			}
			err := w.Validate(pod)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr || !errors.Is(err, ErrForbidden) {
				t.Fatalf("Validate = %v, want %q wrapping ErrForbidden", err, tc.wantErr)
			}
		})
	}
}

func TestSafeSysctlAllowlist(t *testing.T) {
	always := []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
		"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"}
	for _, tc := range []struct {
		desc   string
		kernel *version.Version
		want   []string
	}{
		{desc: "unknown kernel: only those namespaced in every kernel", want: always},
		{desc: "3.10", kernel: version.MustParseGeneric("3.10"), want: always},
		{desc: "4.5", kernel: version.MustParseGeneric("4.5.0"), want: append(slices.Clone(always),
			"net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes")},
		{desc: "4.15 and later: all", kernel: version.MustParseGeneric("6.8.0-1-generic"), want: append(slices.Clone(always),
			"net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
			"net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := SafeSysctlAllowlist(tc.kernel); !slices.Equal(got, tc.want) {
				t.Errorf("SafeSysctlAllowlist(%v) = %q, want %q", tc.kernel, got, tc.want)
			}
		})
	}
}
