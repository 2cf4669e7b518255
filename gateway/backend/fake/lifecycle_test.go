package fake

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerTransitions(t *testing.T) {
	ctx := context.Background()
	start := func(r *Runtime, id string) error {
		_, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
		return err
	}
	stop := func(r *Runtime, id string) error {
		_, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10})
		return err
	}
	tests := []struct {
		desc      string
		steps     []func(*Runtime, string) error // all but the last must succeed
		wantErr   string                         // substring of the last step's error; "" = success
		wantState runtimeapi.ContainerState
	}{
		{desc: "created", wantState: runtimeapi.ContainerState_CONTAINER_CREATED},
		{desc: "created to running", steps: []func(*Runtime, string) error{start}, wantState: runtimeapi.ContainerState_CONTAINER_RUNNING},
		{desc: "running to exited", steps: []func(*Runtime, string) error{start, stop}, wantState: runtimeapi.ContainerState_CONTAINER_EXITED},
		{desc: "stop of created is a no-op", steps: []func(*Runtime, string) error{stop}, wantState: runtimeapi.ContainerState_CONTAINER_CREATED},
		{desc: "stop of exited is idempotent", steps: []func(*Runtime, string) error{start, stop, stop}, wantState: runtimeapi.ContainerState_CONTAINER_EXITED},
		{desc: "start of running fails", steps: []func(*Runtime, string) error{start, start},
			wantErr: "container is in CONTAINER_RUNNING state", wantState: runtimeapi.ContainerState_CONTAINER_RUNNING},
		{desc: "start of exited fails", steps: []func(*Runtime, string) error{start, stop, start},
			wantErr: "container is in CONTAINER_EXITED state", wantState: runtimeapi.ContainerState_CONTAINER_EXITED},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newTestRuntime(t, Options{})
			sbCfg := sandboxConfig("p")
			sb := runSandbox(t, r, sbCfg)
			id := createContainer(t, r, sb, sbCfg, containerConfig("c", nil))
			var err error
			for i, step := range tc.steps {
				err = step(r, id)
				if i < len(tc.steps)-1 && err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("last step: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("last step error = %v, want %q", err, tc.wantErr)
			case tc.wantErr != "" && !errdefs.IsFailedPrecondition(err):
				t.Fatalf("error %v is not FailedPrecondition", err)
			}
			st := containerStatus(t, r, id)
			if st.State != tc.wantState {
				t.Fatalf("state = %s, want %s", st.State, tc.wantState)
			}
			if st.CreatedAt == 0 {
				t.Error("created_at not set")
			}
			if (st.StartedAt != 0) != (tc.wantState != runtimeapi.ContainerState_CONTAINER_CREATED) {
				t.Errorf("started_at = %d in state %s", st.StartedAt, st.State)
			}
			if (st.FinishedAt != 0) != (tc.wantState == runtimeapi.ContainerState_CONTAINER_EXITED) {
				t.Errorf("finished_at = %d in state %s", st.FinishedAt, st.State)
			}
		})
	}
}

func TestCreateContainerPreconditions(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		desc  string
		setup func(t *testing.T, r *Runtime) (sbID string, cfg *runtimeapi.ContainerConfig)
		is    func(error) bool
		want  string
	}{
		{
			desc: "unknown sandbox",
			setup: func(t *testing.T, r *Runtime) (string, *runtimeapi.ContainerConfig) {
				return "nope", containerConfig("c", nil)
			},
			is: errdefs.IsNotFound, want: "failed to find sandbox id",
		},
		{
			desc: "sandbox not ready",
			setup: func(t *testing.T, r *Runtime) (string, *runtimeapi.ContainerConfig) {
				sb := runSandbox(t, r, sandboxConfig("p"))
				if _, err := r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
					t.Fatal(err)
				}
				return sb, containerConfig("c", nil)
			},
			is: errdefs.IsFailedPrecondition, want: "is not ready",
		},
		{
			desc: "image not present",
			setup: func(t *testing.T, r *Runtime) (string, *runtimeapi.ContainerConfig) {
				cfg := containerConfig("c", nil)
				cfg.Image.Image = "nginx:1.27"
				return runSandbox(t, r, sandboxConfig("p")), cfg
			},
			is: errdefs.IsNotFound, want: `failed to resolve image "nginx:1.27"`,
		},
		{
			desc: "image volume's image not present",
			setup: func(t *testing.T, r *Runtime) (string, *runtimeapi.ContainerConfig) {
				cfg := containerConfig("c", nil)
				cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", Image: &runtimeapi.ImageSpec{Image: "data:1"}, Readonly: true}}
				return runSandbox(t, r, sandboxConfig("p")), cfg
			},
			is: errdefs.IsNotFound, want: `failed to resolve image "data:1" of the mount at "/data"`,
		},
		{
			desc: "bad behavior token",
			setup: func(t *testing.T, r *Runtime) (string, *runtimeapi.ContainerConfig) {
				return runSandbox(t, r, sandboxConfig("p")), containerConfig("c", map[string]string{BehaviorAnnotation: "exit=3 explode"})
			},
			is: errdefs.IsInvalidArgument, want: `"explode"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newTestRuntime(t, Options{})
			sb, cfg := tc.setup(t, r)
			_, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb, Config: cfg, SandboxConfig: sandboxConfig("p")})
			if err == nil || !tc.is(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CreateContainer error = %v, want kind and %q", err, tc.want)
			}
			// A failed create must release the name it reserved.
			if len(r.st.containerNames) != 0 {
				t.Fatalf("names still reserved: %v", r.st.containerNames)
			}
		})
	}
}

func TestNameReservation(t *testing.T) {
	ctx := context.Background()
	r := newTestRuntime(t, Options{})
	cfg := sandboxConfig("web")
	first := runSandbox(t, r, cfg)

	_, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("web")})
	if !errdefs.IsConflict(err) || !strings.Contains(err.Error(), `is reserved for "`+first+`"`) {
		t.Fatalf("second sandbox with the same metadata: err = %v, want a reservation conflict naming %s", err, first)
	}
	next := sandboxConfig("web")
	next.Metadata.Attempt = 1
	runSandbox(t, r, next) // another attempt is another name

	c1 := createContainer(t, r, first, cfg, containerConfig("app", nil))
	_, err = r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: first, Config: containerConfig("app", nil), SandboxConfig: cfg})
	if !errdefs.IsConflict(err) || !strings.Contains(err.Error(), c1) {
		t.Fatalf("second container with the same name: err = %v", err)
	}
	// Stopping keeps the name; removing releases it.
	if _, err := r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: first}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig("web")}); !errdefs.IsConflict(err) {
		t.Fatalf("name must stay reserved by a stopped sandbox, err = %v", err)
	}
	if _, err := r.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: first}); err != nil {
		t.Fatal(err)
	}
	again := runSandbox(t, r, sandboxConfig("web"))
	if again == first || len(again) != 64 {
		t.Fatalf("new sandbox ID %q", again)
	}
	createContainer(t, r, again, cfg, containerConfig("app", nil))
}

func TestStopPodSandboxStopsContainers(t *testing.T) {
	ctx := context.Background()
	r := newTestRuntime(t, Options{})
	sb, c1 := runContainer(t, r, "p", "ignore-sigterm")
	created := createContainer(t, r, sb, sandboxConfig("p"), containerConfig("idle", nil))

	for i := 0; i < 2; i++ { // idempotent
		if _, err := r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
			t.Fatalf("StopPodSandbox #%d: %v", i, err)
		}
	}
	st := containerStatus(t, r, c1)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 137 || st.Reason != "Error" {
		t.Fatalf("running container after sandbox stop: %s code %d reason %q, want EXITED 137 Error", st.State, st.ExitCode, st.Reason)
	}
	if st := containerStatus(t, r, created); st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Fatalf("created container became %s", st.State)
	}
	ps, err := r.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
	if err != nil {
		t.Fatal(err)
	}
	if ps.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY || ps.Status.Network.GetIp() != "" {
		t.Fatalf("sandbox after stop: %s ip %q", ps.Status.State, ps.Status.Network.GetIp())
	}
	if _, err := r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: "unknown"}); err != nil {
		t.Fatalf("StopPodSandbox(unknown) = %v, want nil as containerd", err)
	}
}

func TestRemoveSemantics(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		desc string
		run  func(t *testing.T, r *Runtime, sb, ctr string)
		gone []func(r *Runtime, sb, ctr string) bool
	}{
		{
			desc: "remove running container force-stops it",
			run: func(t *testing.T, r *Runtime, sb, ctr string) {
				if _, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctr}); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			desc: "remove unknown container is idempotent",
			run: func(t *testing.T, r *Runtime, sb, ctr string) {
				for i := 0; i < 2; i++ {
					if _, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctr}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: strings.Repeat("f", 64)}); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			desc: "remove sandbox removes its containers",
			run: func(t *testing.T, r *Runtime, sb, ctr string) {
				for i := 0; i < 2; i++ {
					if _, err := r.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := r.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb}); !errdefs.IsNotFound(err) {
					t.Fatalf("PodSandboxStatus after remove = %v, want NotFound", err)
				}
				if len(r.st.sandboxNames) != 0 || r.st.ips.free == nil {
					t.Fatalf("sandbox name or IP not released: %v %v", r.st.sandboxNames, r.st.ips.free)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newTestRuntime(t, Options{})
			sb, ctr := runContainer(t, r, "p", "")
			c := r.st.containers[ctr]
			tc.run(t, r, sb, ctr)
			if _, err := r.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr}); !errdefs.IsNotFound(err) {
				t.Fatalf("ContainerStatus after remove = %v, want NotFound", err)
			}
			if c.state != runtimeapi.ContainerState_CONTAINER_EXITED || c.exitCode != 137 {
				t.Fatalf("removed running container ended %s/%d, want EXITED/137", c.state, c.exitCode)
			}
			if len(r.st.containerNames) != 0 {
				t.Fatalf("container name not released: %v", r.st.containerNames)
			}
		})
	}
}

func TestSandboxStatus(t *testing.T) {
	ctx := context.Background()
	r := newTestRuntime(t, Options{})
	pod := sandboxConfig("pod")
	pod.Annotations = map[string]string{"a": "b"}
	pod.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
	}}
	host := sandboxConfig("host")
	host.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
	}}
	prefix := netip.MustParsePrefix("10.88.0.0/16")
	tests := []struct {
		desc   string
		cfg    *runtimeapi.PodSandboxConfig
		wantIP bool
		ns     *runtimeapi.NamespaceOption
	}{
		{desc: "pod network gets an IP", cfg: pod, wantIP: true, ns: pod.Linux.SecurityContext.NamespaceOptions},
		{desc: "host network gets none", cfg: host, wantIP: false, ns: host.Linux.SecurityContext.NamespaceOptions},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			id := runSandbox(t, r, tc.cfg)
			resp, err := r.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
			if err != nil {
				t.Fatal(err)
			}
			st := resp.Status
			ip := st.GetNetwork().GetIp()
			if tc.wantIP {
				addr, err := netip.ParseAddr(ip)
				if err != nil || !prefix.Contains(addr) {
					t.Fatalf("ip %q not in %s", ip, prefix)
				}
			} else if ip != "" {
				t.Fatalf("host-network sandbox has ip %q", ip)
			}
			if st.State != runtimeapi.PodSandboxState_SANDBOX_READY || st.CreatedAt == 0 || st.Id != id {
				t.Fatalf("status %v", st)
			}
			if got := st.GetLinux().GetNamespaces().GetOptions(); got.GetNetwork() != tc.ns.GetNetwork() || got.GetPid() != tc.ns.GetPid() {
				t.Fatalf("namespace options %v, want %v", got, tc.ns)
			}
			if st.Labels["app"] != tc.cfg.Labels["app"] || st.Annotations["a"] != tc.cfg.Annotations["a"] {
				t.Fatalf("labels/annotations %v %v", st.Labels, st.Annotations)
			}
			if !strings.Contains(resp.Info["info"], id) {
				t.Fatalf("verbose info %q lacks the ID", resp.Info["info"])
			}
			// Callers get copies.
			st.Labels["app"] = "mutated"
			again, _ := r.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
			if again.Status.Labels["app"] == "mutated" {
				t.Fatal("status shares its labels map with the store")
			}
		})
	}
}

func TestContainerStatusFields(t *testing.T) {
	ctx := context.Background()
	r := newTestRuntime(t, Options{})
	sbCfg := sandboxConfig("p")
	sbCfg.LogDirectory = t.TempDir()
	sb := runSandbox(t, r, sbCfg)
	cfg := containerConfig("c", map[string]string{"k": "v"})
	cfg.LogPath = "c/0.log"
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/tmp/data"}}
	id := createContainer(t, r, sb, sbCfg, cfg)
	cfg.Labels["container"] = "changed-by-caller" // the store keeps its own copy

	shares := int64(512)
	if _, err := r.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{CpuShares: shares},
	}); err != nil {
		t.Fatal(err)
	}
	st := containerStatus(t, r, id[:12]) // unique prefix, as containerd accepts
	if st.Id != id {
		t.Fatalf("prefix lookup returned %s", st.Id)
	}
	if st.LogPath != sbCfg.LogDirectory+"/c/0.log" {
		t.Errorf("log_path %q", st.LogPath)
	}
	if st.Image.GetImage() != "docker.io/library/busybox:latest" || !strings.HasPrefix(st.ImageRef, "docker.io/library/busybox@sha256:") || !strings.HasPrefix(st.ImageId, "sha256:") {
		t.Errorf("image %q ref %q id %q", st.Image.GetImage(), st.ImageRef, st.ImageId)
	}
	if st.Labels["container"] != "c" || st.Annotations["k"] != "v" {
		t.Errorf("labels %v annotations %v", st.Labels, st.Annotations)
	}
	if len(st.Mounts) != 1 || st.Mounts[0].ContainerPath != "/data" {
		t.Errorf("mounts %v", st.Mounts)
	}
	if st.Resources.GetLinux().GetCpuShares() != shares {
		t.Errorf("resources %v", st.Resources)
	}
}

func TestResolvePrefix(t *testing.T) {
	m := map[string]*int{"abc123": new(int), "abd456": new(int), "xyz": new(int)}
	tests := []struct {
		desc, id string
		want     *int
	}{
		{desc: "exact", id: "xyz", want: m["xyz"]},
		{desc: "unique prefix", id: "abc", want: m["abc123"]},
		{desc: "ambiguous prefix", id: "ab"},
		{desc: "unknown", id: "q"},
		{desc: "empty", id: ""},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := resolve(m, tc.id)
			if got != tc.want {
				t.Fatalf("resolve(%q) = %p, want %p", tc.id, got, tc.want)
			}
			if tc.want == nil && !errors.Is(err, errdefs.ErrNotFound) {
				t.Fatalf("err = %v, want NotFound", err)
			}
		})
	}
}
