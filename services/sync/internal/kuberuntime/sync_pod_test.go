package kuberuntime

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// mutationRecorder is a RuntimeServiceClient and ImageServiceClient that
// succeeds at every call SyncPod makes and records the calls that change a
// pod; any other call panics (embedded nil interfaces).
type mutationRecorder struct {
	runtimeapi.RuntimeServiceClient
	runtimeapi.ImageServiceClient
	mu        sync.Mutex
	mutations []string
	// sandboxReads counts PodSandboxStatus calls.
	sandboxReads atomic.Int32
}

func (f *mutationRecorder) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mutations = append(f.mutations, call)
}

func (f *mutationRecorder) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.mutations...)
}

func (f *mutationRecorder) Version(context.Context, *runtimeapi.VersionRequest, ...grpc.CallOption) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: testRuntime}, nil
}

func (f *mutationRecorder) RunPodSandbox(context.Context, *runtimeapi.RunPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error) {
	f.record("RunPodSandbox")
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: testSandboxID}, nil
}

func (f *mutationRecorder) PodSandboxStatus(context.Context, *runtimeapi.PodSandboxStatusRequest, ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.sandboxReads.Add(1)
	return &runtimeapi.PodSandboxStatusResponse{Status: readySandbox(testSandboxID, 0)}, nil
}

func (f *mutationRecorder) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest, _ ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error) {
	f.record("CreateContainer " + req.GetConfig().GetMetadata().GetName())
	return &runtimeapi.CreateContainerResponse{ContainerId: "new-" + req.GetConfig().GetMetadata().GetName()}, nil
}

func (f *mutationRecorder) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest, _ ...grpc.CallOption) (*runtimeapi.StartContainerResponse, error) {
	f.record("StartContainer " + req.GetContainerId())
	return &runtimeapi.StartContainerResponse{}, nil
}

func (f *mutationRecorder) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest, _ ...grpc.CallOption) (*runtimeapi.StopContainerResponse, error) {
	f.record("StopContainer " + req.GetContainerId())
	return &runtimeapi.StopContainerResponse{}, nil
}

func (f *mutationRecorder) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.StopPodSandboxResponse, error) {
	f.record("StopPodSandbox " + req.GetPodSandboxId())
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (f *mutationRecorder) ImageStatus(context.Context, *runtimeapi.ImageStatusRequest, ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error) {
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "sha256:busybox"}}, nil
}

// justExited is pod running but for foo2, which has just failed: the first
// restart is allowed, a second one within the back-off is not.
func justExited(pod *v1.Pod) *container.PodStatus {
	ps := makeTestPodStatus(pod)
	foo2 := exited("foo2", 1)
	foo2.FinishedAt = time.Now()
	setStatuses(ps, foo2)
	return ps
}

func TestSyncPodSaysWhetherItActed(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		desc string
		// status is the runtime's view; syncs is how many times SyncPod runs
		// on it; the result of the last run is checked.
		status        func(pod *v1.Pod) *container.PodStatus
		syncs         int
		wantActed     bool
		wantWaiting   bool
		wantMutations bool
	}{
		{
			desc:   "a running pod: nothing to do",
			status: makeTestPodStatus,
			syncs:  1,
		},
		{
			desc:          "no sandbox: created and containers started",
			status:        func(pod *v1.Pod) *container.PodStatus { return &container.PodStatus{ID: pod.UID} },
			syncs:         1,
			wantActed:     true,
			wantMutations: true,
		},
		{
			desc: "an exited container is restarted",
			status: func(pod *v1.Pod) *container.PodStatus {
				ps := makeTestPodStatus(pod)
				setStatuses(ps, exited("foo2", 1))
				return ps
			},
			syncs:         1,
			wantActed:     true,
			wantMutations: true,
		},
		{
			desc: "a restart refused by back-off only sets a waiting reason",
			status: func(pod *v1.Pod) *container.PodStatus {
				return justExited(pod)
			},
			syncs:       2,
			wantWaiting: true,
		},
		{
			desc: "the same back-off again changes nothing",
			status: func(pod *v1.Pod) *container.PodStatus {
				return justExited(pod)
			},
			syncs: 3,
		},
		{
			desc: "a container with a changed spec is killed",
			status: func(pod *v1.Pod) *container.PodStatus {
				ps := makeTestPodStatus(pod)
				ps.ContainerStatuses[0].Hash++
				return ps
			},
			syncs:         1,
			wantActed:     true,
			wantMutations: true,
		},
		{
			desc: "a done pod whose sandbox is stopped has nothing to kill",
			status: func(pod *v1.Pod) *container.PodStatus {
				pod.Spec.RestartPolicy = v1.RestartPolicyNever
				ps := makeTestPodStatus(pod)
				ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{notReadySandbox(testSandboxID, 0)}
				exitAll(ps, 0)
				return ps
			},
			syncs: 1,
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cri := &mutationRecorder{}
			dir := t.TempDir()
			m := NewManager(cri, cri, ManagerOptions{
				Sandbox:   SandboxOptions{PodLogsRoot: dir},
				Container: ContainerOptions{PodLogsRoot: dir},
			})
			pod := makeTestPod()
			ps := tc.status(pod)
			var res SyncResult
			var mutationsBefore int
			for i := range tc.syncs {
				mutationsBefore = len(cri.calls())
				var err error
				res, err = m.SyncPod(ctx, pod, ps, &fakeProbes{}, false)
				if err != nil && i == tc.syncs-1 && tc.wantActed {
					t.Fatalf("SyncPod: %v", err)
				}
			}
			if res.Acted != tc.wantActed || res.WaitingChanged != tc.wantWaiting {
				t.Errorf("result = %+v, want Acted %v WaitingChanged %v", res, tc.wantActed, tc.wantWaiting)
			}
			// Acted must be true exactly when the last sync changed the pod.
			mutated := len(cri.calls()) > mutationsBefore
			if mutated != tc.wantMutations {
				t.Errorf("last sync made mutating calls: %v (%v), want %v", mutated, cri.calls()[mutationsBefore:], tc.wantMutations)
			}
		})
	}
}

// A sync that creates a pod's sandbox hands back the sandbox's status it
// read for the pod's IPs, so that the status read after the sync
// (GetPodStatusOf) does not read it again; a host-network pod's sandbox,
// not read during the sync, is handed back by ID.
func TestSyncPodHandsBackTheCreatedSandboxStatus(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		desc        string
		hostNetwork bool
		wantReads   int32 // PodSandboxStatus calls of the sync and the read after
	}{
		{desc: "pod network: read once, by the sync", wantReads: 1},
		{desc: "host network: read once, after the sync", hostNetwork: true, wantReads: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cri := &mutationRecorder{}
			dir := t.TempDir()
			m := NewManager(cri, cri, ManagerOptions{
				Sandbox:   SandboxOptions{PodLogsRoot: dir},
				Container: ContainerOptions{PodLogsRoot: dir},
			})
			pod := makeTestPod()
			pod.Spec.HostNetwork = tc.hostNetwork
			res, err := m.SyncPod(ctx, pod, &container.PodStatus{ID: pod.UID}, &fakeProbes{}, false)
			if err != nil {
				t.Fatalf("SyncPod: %v", err)
			}
			if !res.Created.HasSandbox() || len(res.Created.ContainerIDs) != len(pod.Spec.Containers) {
				t.Fatalf("created = %+v, want the sandbox and %d containers", res.Created, len(pod.Spec.Containers))
			}
			if got := len(res.Created.Sandboxes) == 1; got == tc.hostNetwork {
				t.Errorf("created sandbox handed back as a status: %v, want %v", got, !tc.hostNetwork)
			}
			ps, err := m.GetPodStatusOf(ctx, pod.UID, pod.Name, pod.Namespace, PodObjects{Sandboxes: res.Created.Sandboxes, SandboxIDs: res.Created.SandboxIDs})
			if err != nil {
				t.Fatal(err)
			}
			if len(ps.SandboxStatuses) != 1 || ps.SandboxStatuses[0].GetId() != testSandboxID {
				t.Errorf("status after the sync has sandboxes %v, want %s", ps.SandboxStatuses, testSandboxID)
			}
			if got := cri.sandboxReads.Load(); got != tc.wantReads {
				t.Errorf("PodSandboxStatus read %d times, want %d", got, tc.wantReads)
			}
		})
	}
}

func TestGeneratePodStatusFromEvent(t *testing.T) {
	ctx := context.Background()
	m := NewManager(&mutationRecorder{}, &mutationRecorder{}, ManagerOptions{})
	sb := readySandbox(testSandboxID, 0)
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId:      "c2",
		PodSandboxStatus: sb,
		ContainersStatuses: []*runtimeapi.ContainerStatus{
			{Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "foo1"}, State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: 1, ExitCode: 3},
			{Id: "c2", Metadata: &runtimeapi.ContainerMetadata{Name: "foo1"}, State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: 2},
		},
	}
	ps, err := m.GeneratePodStatus(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if ps.ID != "uid-1" || ps.Name != "web" || ps.Namespace != "default" {
		t.Errorf("pod = %s %s/%s, want uid-1 default/web", ps.ID, ps.Namespace, ps.Name)
	}
	if len(ps.SandboxStatuses) != 1 || ps.SandboxStatuses[0] != sb {
		t.Errorf("sandboxes = %v, want the event's", ps.SandboxStatuses)
	}
	if len(ps.IPs) != 1 || ps.IPs[0] != testPodIP {
		t.Errorf("IPs = %v, want [%s]", ps.IPs, testPodIP)
	}
	// Newest first, mapped as GetPodStatus maps them.
	if len(ps.ContainerStatuses) != 2 || ps.ContainerStatuses[0].ID.ID != "c2" || ps.ContainerStatuses[1].ExitCode != 3 ||
		ps.ContainerStatuses[0].ID.Type != testRuntime || ps.ContainerStatuses[0].State != container.ContainerStateRunning {
		t.Errorf("containers = %+v, want c2 running then c1 exited 3", ps.ContainerStatuses)
	}
	if _, err := m.GeneratePodStatus(ctx, &runtimeapi.ContainerEventResponse{ContainerId: "x"}); err == nil {
		t.Error("an event without a sandbox built a status")
	}
}

// imageUserRecorder answers ImageStatus and PullImage with an image whose
// user is uid (or, when uid is nil, username), and counts the calls.
type imageUserRecorder struct {
	*mutationRecorder
	uid          *int64
	username     string
	present      bool
	statusCalls  int
	pullCalls    int
	createConfig []*runtimeapi.ContainerConfig
}

func (f *imageUserRecorder) ImageStatus(context.Context, *runtimeapi.ImageStatusRequest, ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error) {
	f.statusCalls++
	if !f.present {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	img := &runtimeapi.Image{Id: "sha256:busybox", Username: f.username}
	if f.uid != nil {
		img.Uid = &runtimeapi.Int64Value{Value: *f.uid}
	}
	return &runtimeapi.ImageStatusResponse{Image: img}, nil
}

func (f *imageUserRecorder) PullImage(context.Context, *runtimeapi.PullImageRequest, ...grpc.CallOption) (*runtimeapi.PullImageResponse, error) {
	f.pullCalls++
	f.present = true
	return &runtimeapi.PullImageResponse{ImageRef: "sha256:busybox"}, nil
}

func (f *imageUserRecorder) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest, opts ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error) {
	f.createConfig = append(f.createConfig, req.GetConfig())
	return f.mutationRecorder.CreateContainer(ctx, req, opts...)
}

// The image's user reaches the container config from the ImageStatus that
// found the image present, without asking again; after a pull it is asked
// once.
func TestImageUserFromOneImageStatus(t *testing.T) {
	uid := int64(1000)
	for _, tc := range []struct {
		desc         string
		uid          *int64
		username     string
		present      bool
		policy       v1.PullPolicy
		wantStatus   int
		wantPulls    int
		wantUID      *int64
		wantUsername string
	}{
		{desc: "present, numeric user", uid: &uid, present: true, policy: v1.PullIfNotPresent, wantStatus: 1, wantUID: &uid},
		{desc: "present, named user", username: "app", present: true, policy: v1.PullIfNotPresent, wantStatus: 1, wantUsername: "app"},
		{desc: "absent: pulled, then asked once for the user", uid: &uid, policy: v1.PullIfNotPresent, wantStatus: 2, wantPulls: 1, wantUID: &uid},
		{desc: "always pulled: asked once for the user", username: "app", present: true, policy: v1.PullAlways, wantStatus: 1, wantPulls: 1, wantUsername: "app"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cri := &imageUserRecorder{mutationRecorder: &mutationRecorder{}, uid: tc.uid, username: tc.username, present: tc.present}
			dir := t.TempDir()
			m := NewManager(cri, cri, ManagerOptions{
				Sandbox:   SandboxOptions{PodLogsRoot: dir},
				Container: ContainerOptions{PodLogsRoot: dir, PodContainersRoot: dir, PodVolumesRoot: dir},
			})
			pod := makeTestPod()
			pod.Spec.Containers = pod.Spec.Containers[:1]
			pod.Spec.Containers[0].ImagePullPolicy = tc.policy
			if _, err := m.SyncPod(context.Background(), pod, &container.PodStatus{ID: pod.UID}, &fakeProbes{}, false); err != nil {
				t.Fatalf("SyncPod: %v", err)
			}
			if cri.statusCalls != tc.wantStatus || cri.pullCalls != tc.wantPulls {
				t.Errorf("ImageStatus x%d, PullImage x%d; want x%d, x%d", cri.statusCalls, cri.pullCalls, tc.wantStatus, tc.wantPulls)
			}
			if len(cri.createConfig) != 1 {
				t.Fatalf("%d containers created, want 1", len(cri.createConfig))
			}
			sc := cri.createConfig[0].GetLinux().GetSecurityContext()
			switch {
			case tc.wantUID != nil && sc.GetRunAsUser().GetValue() != *tc.wantUID:
				t.Errorf("runAsUser = %v, want %d", sc.GetRunAsUser(), *tc.wantUID)
			case tc.wantUID == nil && sc.GetRunAsUser() != nil:
				t.Errorf("runAsUser = %v, want none", sc.GetRunAsUser())
			case sc.GetRunAsUsername() != tc.wantUsername:
				t.Errorf("runAsUsername = %q, want %q", sc.GetRunAsUsername(), tc.wantUsername)
			}
		})
	}
}

// envRecorder keeps the environment of each container created and reports
// a sandbox with the given IP ("" for a host-network one, as containerd).
type envRecorder struct {
	*mutationRecorder
	sandboxIP string
	envs      []map[string]string
}

func (f *envRecorder) PodSandboxStatus(context.Context, *runtimeapi.PodSandboxStatusRequest, ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	sb := readySandbox(testSandboxID, 0)
	sb.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: f.sandboxIP}
	return &runtimeapi.PodSandboxStatusResponse{Status: sb}, nil
}

func (f *envRecorder) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest, opts ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error) {
	env := map[string]string{}
	for _, kv := range req.GetConfig().GetEnvs() {
		env[kv.GetKey()] = string(kv.GetValue())
	}
	f.envs = append(f.envs, env)
	return f.mutationRecorder.CreateContainer(ctx, req, opts...)
}

// A host-network pod's containers see the node's IPs as status.podIP(s):
// its sandbox has none, and the caller passes the API status's pod IPs in
// podStatus.IPs. Other pods take their sandbox's IP.
func TestSyncPodPodIPEnv(t *testing.T) {
	const nodeIP, nodeIPv6 = "192.0.2.10", "2001:db8::10"
	for _, tc := range []struct {
		desc        string
		hostNetwork bool
		sandboxIP   string
		statusIPs   []string
		wantPodIP   string
		wantPodIPs  string
	}{
		{desc: "host network: the node's IPs", hostNetwork: true, statusIPs: []string{nodeIP, nodeIPv6},
			wantPodIP: nodeIP, wantPodIPs: nodeIP + "," + nodeIPv6},
		{desc: "host network without known node IPs: none", hostNetwork: true},
		{desc: "pod network: the sandbox's IP", sandboxIP: testPodIP, statusIPs: []string{nodeIP},
			wantPodIP: testPodIP, wantPodIPs: testPodIP},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cri := &envRecorder{mutationRecorder: &mutationRecorder{}, sandboxIP: tc.sandboxIP}
			dir := t.TempDir()
			m := NewManager(cri, cri, ManagerOptions{
				Sandbox: SandboxOptions{PodLogsRoot: dir},
				Container: ContainerOptions{PodLogsRoot: dir, PodContainersRoot: dir, PodVolumesRoot: dir,
					EnvOptions: EnvOptions{HostIPs: []string{nodeIP, nodeIPv6}}},
			})
			pod := makeTestPod()
			pod.Spec.HostNetwork = tc.hostNetwork
			pod.Spec.Containers = pod.Spec.Containers[:1]
			pod.Spec.Containers[0].Env = []v1.EnvVar{
				fieldEnv("POD_IP", "status.podIP"), fieldEnv("POD_IPS", "status.podIPs"), fieldEnv("HOST_IP", "status.hostIP"),
			}
			ps := &container.PodStatus{ID: pod.UID, IPs: tc.statusIPs}
			if _, err := m.SyncPod(context.Background(), pod, ps, &fakeProbes{}, false); err != nil {
				t.Fatalf("SyncPod: %v", err)
			}
			if len(cri.envs) != 1 {
				t.Fatalf("%d containers created, want 1", len(cri.envs))
			}
			env := cri.envs[0]
			if env["POD_IP"] != tc.wantPodIP || env["POD_IPS"] != tc.wantPodIPs || env["HOST_IP"] != nodeIP {
				t.Errorf("POD_IP=%q POD_IPS=%q HOST_IP=%q, want %q %q %q",
					env["POD_IP"], env["POD_IPS"], env["HOST_IP"], tc.wantPodIP, tc.wantPodIPs, nodeIP)
			}
		})
	}
}
