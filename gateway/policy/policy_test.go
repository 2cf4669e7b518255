package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func sandboxReq(privileged bool, ns *runtimeapi.NamespaceOption) *runtimeapi.RunPodSandboxRequest {
	return &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u1"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			Privileged:       privileged,
			NamespaceOptions: ns,
		}},
	}}
}

func containerReq(privileged bool, ns *runtimeapi.NamespaceOption, hostPaths ...string) *runtimeapi.CreateContainerRequest {
	var mounts []*runtimeapi.Mount
	for _, hp := range hostPaths {
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: "/mnt", HostPath: hp})
	}
	return &runtimeapi.CreateContainerRequest{
		PodSandboxId: "sb1",
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "c1"},
			Mounts:   mounts,
			Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				Privileged:       privileged,
				NamespaceOptions: ns,
			}},
		},
		SandboxConfig: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default"},
		},
	}
}

func withCaps(req *runtimeapi.CreateContainerRequest, caps ...string) *runtimeapi.CreateContainerRequest {
	req.Config.Linux.SecurityContext.Capabilities = &runtimeapi.Capability{AddCapabilities: caps}
	return req
}

func nodeNS(network, pid, ipc bool) *runtimeapi.NamespaceOption {
	mode := func(node bool) runtimeapi.NamespaceMode {
		if node {
			return runtimeapi.NamespaceMode_NODE
		}
		return runtimeapi.NamespaceMode_POD
	}
	return &runtimeapi.NamespaceOption{Network: mode(network), Pid: mode(pid), Ipc: mode(ipc)}
}

func TestCheck(t *testing.T) {
	allowAll := Config{AllowPrivileged: true, AllowHostNetwork: true, AllowHostPID: true,
		AllowHostIPC: true, AllowedHostPathPrefixes: []string{"/"}}
	tests := []struct {
		desc    string
		cfg     Config
		req     any
		wantErr string // substring of the denial; "" = allowed
	}{
		{desc: "default allows a plain pod", cfg: DefaultConfig(), req: sandboxReq(false, nil)},
		{desc: "default allows a checkpoint under sync's directories", cfg: DefaultConfig(),
			req: &runtimeapi.CheckpointContainerRequest{ContainerId: "c1", Location: DefaultHostPathPrefix + "/sync/checkpoints/checkpoint-web_default-app-2026.tar"}},
		{desc: "default denies a checkpoint elsewhere", cfg: DefaultConfig(),
			req:     &runtimeapi.CheckpointContainerRequest{ContainerId: "c1", Location: "/etc/passwd"},
			wantErr: `policy: checkpoint location "/etc/passwd" is outside the allowed host paths (container "c1")`},
		{desc: "default denies a relative checkpoint location", cfg: DefaultConfig(),
			req: &runtimeapi.CheckpointContainerRequest{ContainerId: "c1", Location: "ckpt.tar"}, wantErr: "outside the allowed host paths"},
		{desc: "default allows a host network pod", cfg: DefaultConfig(), req: sandboxReq(false, nodeNS(true, false, false))},
		{desc: "zero config denies a host network pod", cfg: Config{}, req: sandboxReq(false, nodeNS(true, false, false)),
			wantErr: `policy: host network is not allowed (pod "default/web")`},
		{desc: "default denies a privileged pod", cfg: DefaultConfig(), req: sandboxReq(true, nil),
			wantErr: `policy: privileged pods are not allowed (pod "default/web")`},
		{desc: "default denies a host PID pod", cfg: DefaultConfig(), req: sandboxReq(false, nodeNS(false, true, false)),
			wantErr: "host PID namespace is not allowed"},
		{desc: "default denies a host IPC pod", cfg: DefaultConfig(), req: sandboxReq(false, nodeNS(false, false, true)),
			wantErr: "host IPC namespace is not allowed"},
		{desc: "allow-all allows a privileged host-everything pod", cfg: allowAll, req: sandboxReq(true, nodeNS(true, true, true))},
		{desc: "sandbox without linux config is allowed", cfg: Config{}, req: &runtimeapi.RunPodSandboxRequest{
			Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "a", Namespace: "b"}}}},
		{desc: "default denies a privileged container", cfg: DefaultConfig(), req: containerReq(true, nil),
			wantErr: `policy: privileged containers are not allowed (container "c1" in pod "default/web")`},
		{desc: "allow privileged allows a privileged container", cfg: Config{AllowPrivileged: true}, req: containerReq(true, nil)},
		{desc: "container asking for host PID is denied", cfg: DefaultConfig(), req: containerReq(false, nodeNS(false, true, false)),
			wantErr: `host PID namespace is not allowed (container "c1"`},
		{desc: "host PID allowed", cfg: Config{AllowHostPID: true}, req: containerReq(false, nodeNS(false, true, false))},
		{desc: "default allows a mount under the splitlet root", cfg: DefaultConfig(),
			req: containerReq(false, nil, "/var/lib/splitlet/pods/u1/etc-hosts")},
		{desc: "default denies /etc", cfg: DefaultConfig(), req: containerReq(false, nil, "/etc"),
			wantErr: `host path "/etc" is not under an allowed prefix`},
		{desc: "dot-dot escape is cleaned before matching", cfg: Config{AllowedHostPathPrefixes: []string{"/var/log"}},
			req: containerReq(false, nil, "/var/log/../etc"), wantErr: `host path "/var/log/../etc"`},
		{desc: "sibling with a shared string prefix is denied", cfg: Config{AllowedHostPathPrefixes: []string{"/var/lib/splitlet"}},
			req: containerReq(false, nil, "/var/lib/splitlet2/x"), wantErr: "not under an allowed prefix"},
		{desc: "prefix itself is allowed", cfg: Config{AllowedHostPathPrefixes: []string{"/data/"}},
			req: containerReq(false, nil, "/data")},
		{desc: "second mount denied even when the first is fine", cfg: Config{AllowedHostPathPrefixes: []string{"/data"}},
			req: containerReq(false, nil, "/data/a", "/root/.ssh"), wantErr: `host path "/root/.ssh"`},
		{desc: "relative prefix is ignored", cfg: Config{AllowedHostPathPrefixes: []string{"data"}},
			req: containerReq(false, nil, "data/x"), wantErr: "not under an allowed prefix"},
		{desc: "slash allows every host path", cfg: Config{AllowedHostPathPrefixes: []string{"/"}},
			req: containerReq(false, nil, "/etc/shadow")},
		{desc: "mount without host path is not a host path mount", cfg: Config{}, req: containerReq(false, nil, "")},
		{desc: "default allows a baseline capability", cfg: DefaultConfig(), req: withCaps(containerReq(false, nil), "NET_BIND_SERVICE", "CAP_CHOWN")},
		{desc: "default denies SYS_ADMIN", cfg: DefaultConfig(), req: withCaps(containerReq(false, nil), "CHOWN", "SYS_ADMIN"),
			wantErr: `capability SYS_ADMIN is not allowed (container "c1"`},
		{desc: "default denies ALL", cfg: DefaultConfig(), req: withCaps(containerReq(false, nil), "all"),
			wantErr: "capability ALL is not allowed"},
		{desc: "ALL listed is still not every capability", cfg: Config{AllowedCapabilities: []string{"ALL"}}, req: withCaps(containerReq(false, nil), "ALL"),
			wantErr: "capability ALL is not allowed"},
		{desc: "star allows ALL", cfg: Config{AllowedCapabilities: []string{"*"}}, req: withCaps(containerReq(false, nil), "ALL", "SYS_ADMIN")},
		{desc: "a listed capability in either spelling", cfg: Config{AllowedCapabilities: []string{"CAP_NET_ADMIN"}}, req: withCaps(containerReq(false, nil), "net_admin")},
		{desc: "a privileged container's capabilities are not checked", cfg: Config{AllowPrivileged: true}, req: withCaps(containerReq(true, nil), "SYS_ADMIN")},
		{desc: "other requests are allowed", cfg: Config{}, req: &runtimeapi.StartContainerRequest{ContainerId: "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			err := New(tc.cfg).Check(tc.req)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Check() = %v, want allowed", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check() allowed, want denial containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Check() = %q, want it to contain %q", err, tc.wantErr)
			}
			if !errors.Is(err, errdefs.ErrPermissionDenied) {
				t.Errorf("Check() error %v does not wrap errdefs.ErrPermissionDenied", err)
			}
			var denied *DeniedError
			if !errors.As(err, &denied) || denied.Rule == "" {
				t.Errorf("Check() error %v is not a DeniedError naming a rule", err)
			}
		})
	}
}

// A symbolic link under an allowed prefix that leads out of it is seen
// where it leads, for a path that exists and for one below it that does
// not yet (DirectoryOrCreate).
func TestHostPathsAreResolvedThroughLinks(t *testing.T) {
	root := t.TempDir()
	allowed := filepath.Join(root, "allowed")
	secret := filepath.Join(root, "secret")
	for _, d := range []string{allowed, secret} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(allowed, "link")); err != nil {
		t.Fatal(err)
	}
	p := New(Config{AllowedHostPathPrefixes: []string{allowed}})
	for path, want := range map[string]bool{
		filepath.Join(allowed, "plain"):          true,
		filepath.Join(allowed, "link"):           false,
		filepath.Join(allowed, "link", "new/x"):  false,
		filepath.Join(allowed, "..", "secret"):   false,
		filepath.Join(allowed, "new", "..", "a"): true,
	} {
		if got := p.hostPathAllowed(path); got != want {
			t.Errorf("hostPathAllowed(%s) = %v, want %v", path, got, want)
		}
	}
}

func TestViolationsNameWhatBrokeEachRule(t *testing.T) {
	p := New(DefaultConfig())
	got := p.Violations(Pod{
		HostPID: true,
		Containers: []Container{
			{AddCapabilities: []string{"CHOWN"}},
			{Privileged: true},
			{AddCapabilities: []string{"SYS_TIME", "KILL", "CAP_NET_RAW"}},
		},
		HostPaths: []HostPath{{Index: 0, Path: "/var/lib/splitlet/x"}, {Index: 3, Path: "/etc"}},
	})
	want := []Violation{
		{Kind: KindHostPID, Rule: "host PID namespace is not allowed"},
		{Kind: KindPrivileged, Rule: "privileged containers are not allowed", Index: 1},
		{Kind: KindCapability, Rule: "capability SYS_TIME is not allowed", Index: 2, Value: "SYS_TIME"},
		{Kind: KindCapability, Rule: "capability NET_RAW is not allowed", Index: 2, Value: "CAP_NET_RAW"},
		{Kind: KindHostPath, Rule: `host path "/etc" is not under an allowed prefix`, Index: 3, Value: "/etc"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Violations =\n%+v\nwant\n%+v", got, want)
	}
}
