// Package sysctl is the node's rule for the sysctls a pod may set
// (pod.spec.securityContext.sysctls): the kubelet's pkg/kubelet/sysctl
// rebuilt. A sysctl is allowed when it is on the safe list for the running
// kernel (SafeSysctlAllowlist) or matches one of the operator's
// --allowed-unsafe-sysctls patterns, and, being in the pod's network or IPC
// namespace, the pod does not share that namespace with the host.
//
// Sync applies it to every new pod before the pod reaches the runtime; a
// pod it refuses ends Failed with reason ForbiddenReason.
//
//	kernel, _ := sysctl.KernelVersion()
//	w, err := sysctl.NewAllowlist(append(sysctl.SafeSysctlAllowlist(kernel), allowedUnsafe...))
//	if err := w.Validate(pod); err != nil {
//		// reject the pod: reason sysctl.ForbiddenReason, message err.Error()
//	}
package sysctl

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// ForbiddenReason is the status reason of a pod refused for its sysctls
// (the kubelet's sysctl.ForbiddenReason).
const ForbiddenReason = "SysctlForbidden"

// ErrForbidden is what Validate's error wraps.
var ErrForbidden = errors.New("forbidden sysctl")

// maxPatternLength and patternRegexp are what the API server's
// IsValidSysctlPattern accepts: dot- or slash-separated segments of
// lower-case letters, digits, '-' and '_', the last of which may end in '*'.
const maxPatternLength = 253

var patternRegexp = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]$`)

// Allowlist holds allowed sysctls, each with the kernel namespace that
// makes it per pod. The zero value allows nothing; it is safe for
// concurrent use once built.
type Allowlist struct {
	sysctls  map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

// NewAllowlist builds an Allowlist of sysctl names and patterns ending in
// '*' (e.g. "net.core.*", "kernel.msg*"; '/' may separate as well as '.').
// As the kubelet's NewAllowlist, a pattern that is malformed or not known
// to be namespaced by the kernel (so setting it would change the node, not
// the pod) is an error.
func NewAllowlist(patterns []string) (*Allowlist, error) {
	w := &Allowlist{sysctls: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range patterns {
		if len(p) > maxPatternLength || !patternRegexp.MatchString(p) {
			return nil, fmt.Errorf("sysctl pattern %q must have at most %d characters and be dot- or slash-separated segments of a-z, 0-9, '-' and '_', optionally ending in '*'", p, maxPatternLength)
		}
		ns, nameOrPrefix, prefixed := utilsysctl.GetNamespace(p)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("sysctl pattern %q: %q is not known to be namespaced", p, nameOrPrefix)
		}
		if prefixed {
			w.prefixes[nameOrPrefix] = ns
		} else {
			w.sysctls[nameOrPrefix] = ns
		}
	}
	return w, nil
}

// Validate returns nil when the allowlist allows every sysctl pod sets,
// else an error wrapping ErrForbidden naming the first sysctl it does not:
// the message of the kubelet's patternAllowlist.Admit.
func (w *Allowlist) Validate(pod *v1.Pod) error {
	if pod.Spec.SecurityContext == nil {
		return nil
	}
	for _, s := range pod.Spec.SecurityContext.Sysctls {
		if err := w.validateSysctl(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return fmt.Errorf("%w: %s", ErrForbidden, err)
		}
	}
	return nil
}

// validateSysctl is the kubelet's patternAllowlist.validateSysctl: an
// exact name wins over the patterns; a sysctl of the network or IPC
// namespace is refused to a pod sharing that namespace with the host,
// where setting it would change the node.
func (w *Allowlist) validateSysctl(name string, hostNet, hostIPC bool) error {
	name = utilsysctl.NormalizeName(name)
	ns, found := w.sysctls[name]
	if !found {
		for prefix, pns := range w.prefixes {
			if strings.HasPrefix(name, prefix) {
				ns, found = pns, true
				break
			}
		}
	}
	switch {
	case !found:
		return fmt.Errorf("%q not allowlisted", name)
	case ns == utilsysctl.IPCNamespace && hostIPC, ns == utilsysctl.NetNamespace && hostNet:
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}

// safeSysctls are the kubelet's safe sysctls: namespaced and isolated, so
// a pod may set them without the operator's leave. Those with a kernel
// version became namespaced in that version.
var safeSysctls = []struct {
	name, kernel string
}{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", kernel: "3.16"},
	{name: "net.ipv4.tcp_keepalive_time", kernel: "4.5"},
	{name: "net.ipv4.tcp_fin_timeout", kernel: "4.6"},
	{name: "net.ipv4.tcp_keepalive_intvl", kernel: "4.5"},
	{name: "net.ipv4.tcp_keepalive_probes", kernel: "4.5"},
	{name: "net.ipv4.tcp_rmem", kernel: "4.15"},
	{name: "net.ipv4.tcp_wmem", kernel: "4.15"},
}

// SafeSysctlAllowlist returns the safe sysctls for a kernel of the given
// version, as the kubelet's SafeSysctlAllowlist: a sysctl that needs a
// newer kernel, or any kernel version when kernel is nil (unknown), is
// left out.
func SafeSysctlAllowlist(kernel *version.Version) []string {
	var names []string
	for _, s := range safeSysctls {
		if s.kernel == "" || (kernel != nil && kernel.AtLeast(version.MustParseGeneric(s.kernel))) {
			names = append(names, s.name)
		}
	}
	return names
}

// KernelVersion reads the running kernel's version from
// /proc/sys/kernel/osrelease, as the kubelet's kernel.GetVersion.
func KernelVersion() (*version.Version, error) {
	raw, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return nil, fmt.Errorf("kernel version: %w", err)
	}
	v, err := version.ParseGeneric(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("kernel version: %w", err)
	}
	return v, nil
}
