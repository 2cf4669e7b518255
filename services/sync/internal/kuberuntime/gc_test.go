package kuberuntime

import (
	"context"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// gcRuntime is a RuntimeServiceClient holding fixed sandboxes and
// containers, recording what GarbageCollect removes; any other call panics
// (embedded nil interface).
type gcRuntime struct {
	runtimeapi.RuntimeServiceClient
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container

	mu                                  sync.Mutex
	removedSandboxes, removedContainers []string
}

func (f *gcRuntime) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: f.sandboxes}, nil
}

func (f *gcRuntime) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: f.containers}, nil
}

func (f *gcRuntime) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest, _ ...grpc.CallOption) (*runtimeapi.RemoveContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removedContainers = append(f.removedContainers, req.GetContainerId())
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (f *gcRuntime) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.RemovePodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removedSandboxes = append(f.removedSandboxes, req.GetPodSandboxId())
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// gcSandbox is a sandbox of pod "u" created at t; managed says sync made it.
func gcSandbox(id string, t int64, ready, managed bool) *runtimeapi.PodSandbox {
	state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		state = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	sb := &runtimeapi.PodSandbox{Id: id, CreatedAt: t, State: state,
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u"},
		Labels:   map[string]string{KubernetesPodUIDLabel: "u"}}
	if managed {
		sb.Annotations = map[string]string{ManagedByAnnotation: ManagedByValue}
	}
	return sb
}

// gcContainer is an instance of container "app" of pod "u" in sandbox sb.
func gcContainer(id, sb string, t int64, running bool) *runtimeapi.Container {
	state := runtimeapi.ContainerState_CONTAINER_EXITED
	if running {
		state = runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	return &runtimeapi.Container{Id: id, PodSandboxId: sb, CreatedAt: t, State: state,
		Labels: map[string]string{KubernetesPodUIDLabel: "u", KubernetesContainerNameLabel: "app"}}
}

// The container GC of a pod that still exists keeps the newest exited
// instance of each container and removes the pod's dead sandboxes (not
// ready, holding no container, not the newest), as the kubelet's
// containerGC.evictContainers then evictSandboxes do. The chaos suite on
// containerd found every node reboot leaving each pod one more dead
// sandbox, for good.
func TestGarbageCollectEvictsDeadSandboxes(t *testing.T) {
	for _, tc := range []struct {
		desc           string
		sandboxes      []*runtimeapi.PodSandbox
		containers     []*runtimeapi.Container
		wantContainers []string
		wantSandboxes  []string
	}{
		{
			desc: "two reboots: the oldest sandbox goes once its exited container was collected",
			sandboxes: []*runtimeapi.PodSandbox{
				gcSandbox("A", 1, false, true), gcSandbox("B", 2, false, true), gcSandbox("C", 3, true, true)},
			containers: []*runtimeapi.Container{
				gcContainer("a", "A", 1, false), gcContainer("b", "B", 2, false), gcContainer("c", "C", 3, true)},
			wantContainers: []string{"a"},
			wantSandboxes:  []string{"A"},
		},
		{
			desc:          "the newest sandbox is kept, dead or not",
			sandboxes:     []*runtimeapi.PodSandbox{gcSandbox("A", 1, false, true), gcSandbox("B", 2, false, true)},
			wantSandboxes: []string{"A"},
		},
		{
			desc:       "a dead sandbox holding the newest exited instance stays",
			sandboxes:  []*runtimeapi.PodSandbox{gcSandbox("A", 1, false, true), gcSandbox("B", 2, true, true)},
			containers: []*runtimeapi.Container{gcContainer("a", "A", 1, false), gcContainer("b", "B", 2, true)},
		},
		{
			desc:      "ready sandboxes stay (a duplicate is SyncPod's to kill)",
			sandboxes: []*runtimeapi.PodSandbox{gcSandbox("A", 1, true, true), gcSandbox("B", 2, true, true)},
		},
		{
			desc:      "a pod sync did not create is left alone",
			sandboxes: []*runtimeapi.PodSandbox{gcSandbox("A", 1, false, false), gcSandbox("B", 2, false, false)},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := &gcRuntime{sandboxes: tc.sandboxes, containers: tc.containers}
			m := NewManager(rt, nil, ManagerOptions{})
			if err := m.GarbageCollect(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rt.removedContainers, tc.wantContainers) {
				t.Errorf("removed containers %v, want %v", rt.removedContainers, tc.wantContainers)
			}
			if !slices.Equal(rt.removedSandboxes, tc.wantSandboxes) {
				t.Errorf("removed sandboxes %v, want %v", rt.removedSandboxes, tc.wantSandboxes)
			}
		})
	}
}

// DeleteAllUnusedContainers empties a terminated pod a source still holds
// (every instance not running, every sandbox not ready, the newest
// included) and treats other pods as GarbageCollect does, as the kubelet's
// GarbageCollect with evictNonDeletedPods does.
func TestDeleteAllUnusedContainers(t *testing.T) {
	created := gcContainer("c", "B", 3, false)
	created.State = runtimeapi.ContainerState_CONTAINER_CREATED
	for _, tc := range []struct {
		desc           string
		terminated     bool
		sandboxes      []*runtimeapi.PodSandbox
		containers     []*runtimeapi.Container
		wantContainers []string
		wantSandboxes  []string
	}{
		{
			desc:           "terminated pod: every dead instance and sandbox goes",
			terminated:     true,
			sandboxes:      []*runtimeapi.PodSandbox{gcSandbox("A", 1, false, true), gcSandbox("B", 2, false, true)},
			containers:     []*runtimeapi.Container{gcContainer("a", "A", 1, false), gcContainer("b", "B", 2, false), created},
			wantContainers: []string{"c", "b", "a"},
			wantSandboxes:  []string{"B", "A"},
		},
		{
			desc:           "terminated pod: a running container and its ready sandbox stay",
			terminated:     true,
			sandboxes:      []*runtimeapi.PodSandbox{gcSandbox("A", 1, false, true), gcSandbox("B", 2, true, true)},
			containers:     []*runtimeapi.Container{gcContainer("a", "A", 1, false), gcContainer("b", "B", 2, true)},
			wantContainers: []string{"a"},
			wantSandboxes:  []string{"A"},
		},
		{
			desc:           "running pod: the newest exited instance and the newest sandbox stay",
			sandboxes:      []*runtimeapi.PodSandbox{gcSandbox("A", 1, false, true), gcSandbox("B", 2, false, true)},
			containers:     []*runtimeapi.Container{gcContainer("a", "A", 1, false), gcContainer("b", "B", 2, false)},
			wantContainers: []string{"a"},
			wantSandboxes:  []string{"A"},
		},
		{
			desc:       "a pod sync did not create is left alone, terminated or not",
			terminated: true,
			sandboxes:  []*runtimeapi.PodSandbox{gcSandbox("A", 1, false, false)},
			containers: []*runtimeapi.Container{gcContainer("a", "A", 1, false)},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := &gcRuntime{sandboxes: tc.sandboxes, containers: tc.containers}
			m := NewManager(rt, nil, ManagerOptions{})
			terminated := func(uid types.UID) bool { return tc.terminated && uid == "u" }
			if err := m.DeleteAllUnusedContainers(context.Background(), terminated); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rt.removedContainers, tc.wantContainers) {
				t.Errorf("removed containers %v, want %v", rt.removedContainers, tc.wantContainers)
			}
			if !slices.Equal(rt.removedSandboxes, tc.wantSandboxes) {
				t.Errorf("removed sandboxes %v, want %v", rt.removedSandboxes, tc.wantSandboxes)
			}
		})
	}
}
