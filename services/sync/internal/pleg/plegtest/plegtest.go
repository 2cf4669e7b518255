// Package plegtest has the fakes that tests of the PLEG and of the sync loop
// around it share.
package plegtest

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// FakeCRI answers the list calls from its fields; every other method of the
// embedded interface panics if called. Tests change the fields between
// relists, never during one.
type FakeCRI struct {
	runtimeapi.RuntimeServiceClient
	Sandboxes  []*runtimeapi.PodSandbox
	Containers []*runtimeapi.Container
}

func (f *FakeCRI) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: f.Sandboxes}, nil
}

func (f *FakeCRI) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: f.Containers}, nil
}

// Container is a container of pod uid as the runtime lists it.
func Container(id, uid string, state runtimeapi.ContainerState) *runtimeapi.Container {
	return &runtimeapi.Container{Id: id, State: state, Labels: map[string]string{kuberuntime.KubernetesPodUIDLabel: uid}}
}

// Sandbox is a sandbox of pod uid as the runtime lists it.
func Sandbox(id, uid string, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{Id: id, State: state, Labels: map[string]string{kuberuntime.KubernetesPodUIDLabel: uid}}
}

// Statuses is a pleg.Runtime whose pods' statuses the test sets (Set); it
// counts GetPodStatus calls. A pod without a status set has an empty one.
type Statuses struct {
	mu     sync.Mutex
	status map[types.UID]*container.PodStatus
	reads  int
	err    error
}

// NewStatuses returns a Statuses with no status set.
func NewStatuses() *Statuses {
	return &Statuses{status: map[types.UID]*container.PodStatus{}}
}

func (s *Statuses) GetPodStatus(_ context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.err != nil {
		return nil, s.err
	}
	if ps, ok := s.status[uid]; ok {
		return ps, nil
	}
	return &container.PodStatus{ID: uid, Name: name, Namespace: namespace}, nil
}

// GeneratePodStatus answers with the status set for the event's pod, as if
// the event carried it, and fails for a pod without one.
func (s *Statuses) GeneratePodStatus(_ context.Context, ev *runtimeapi.ContainerEventResponse) (*container.PodStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, ok := s.status[types.UID(ev.GetPodSandboxStatus().GetMetadata().GetUid())]
	if !ok {
		return nil, errors.New("no status")
	}
	return ps, nil
}

// Set makes ps the pod's status.
func (s *Statuses) Set(uid types.UID, ps *container.PodStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status[uid] = ps
}

// Status returns the status set for the pod, or nil.
func (s *Statuses) Status(uid types.UID) *container.PodStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status[uid]
}

// SetErr makes every later GetPodStatus fail with err (nil: succeed).
func (s *Statuses) SetErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// Reads is how many times GetPodStatus was called.
func (s *Statuses) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// RunningStatus is a pod with a ready sandbox sb-<uid> and one container
// c-<uid> named c in state.
func RunningStatus(uid types.UID, state container.State) *container.PodStatus {
	return &container.PodStatus{
		ID:              uid,
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{{Id: "sb-" + string(uid), State: runtimeapi.PodSandboxState_SANDBOX_READY}},
		ContainerStatuses: []*container.Status{{
			ID: container.BuildContainerID("fake", "c-"+string(uid)), Name: "c", State: state,
			CreatedAt: time.Unix(1, 0), StartedAt: time.Unix(2, 0),
		}},
	}
}
