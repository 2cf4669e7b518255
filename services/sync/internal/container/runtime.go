package container

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerID names a container in a given runtime. Type is the runtime's
// name (as the kubelet writes "containerd://<id>" in pod statuses); ID is the
// CRI container or sandbox ID.
//
// It matches the kubelet's kubecontainer.ContainerID.
type ContainerID struct {
	Type string
	ID   string
}

// BuildContainerID returns the ContainerID of CRI id in runtime typ.
func BuildContainerID(typ, id string) ContainerID {
	return ContainerID{Type: typ, ID: id}
}

// String renders the ID as "<type>://<id>", the form pod statuses carry.
func (c ContainerID) String() string {
	return fmt.Sprintf("%s://%s", c.Type, c.ID)
}

// IsEmpty reports whether the ID names nothing.
func (c ContainerID) IsEmpty() bool {
	return c == ContainerID{}
}

// State is the runtime state of a container, reduced to the four states the
// kubelet reasons about (kubecontainer.State).
type State string

// The states match the kubelet's kubecontainer.ContainerState* constants
// (and their string values, which appear in kill messages).
const (
	ContainerStateCreated State = "created"
	ContainerStateRunning State = "running"
	ContainerStateExited  State = "exited"
	// ContainerStateUnknown covers a container the runtime cannot vouch for;
	// it may still be running, so it is killed before being restarted.
	ContainerStateUnknown State = "unknown"
)

// StateFromCRI converts a CRI container state, as the kubelet's
// toKubeContainerState does; anything unexpected is Unknown.
func StateFromCRI(state runtimeapi.ContainerState) State {
	switch state {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return ContainerStateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return ContainerStateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return ContainerStateExited
	default:
		return ContainerStateUnknown
	}
}

// SandboxToContainerState maps a sandbox state onto container states, as the
// kubelet's SandboxToContainerState does for its event generator: a ready
// sandbox counts as running, a not-ready one as exited.
func SandboxToContainerState(state runtimeapi.PodSandboxState) State {
	switch state {
	case runtimeapi.PodSandboxState_SANDBOX_READY:
		return ContainerStateRunning
	case runtimeapi.PodSandboxState_SANDBOX_NOTREADY:
		return ContainerStateExited
	default:
		return ContainerStateUnknown
	}
}

// Status is what the runtime reports about one container instance (one
// attempt). It matches the fields of the kubelet's kubecontainer.Status that
// pod lifecycle decisions and pod status reporting use.
type Status struct {
	// ID of the container instance.
	ID ContainerID
	// Name is the container's name in the pod spec (from the container's
	// metadata), not the runtime's name for it.
	Name  string
	State State

	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	// ExitCode is meaningful only when State is exited.
	ExitCode int

	// Image is the image the spec asked for; ImageRef is the resolved
	// reference (digest) the runtime ran.
	Image    string
	ImageRef string

	// Hash is HashContainer of the spec the container was created from, as
	// recorded on the container (a label) when it was created.
	Hash uint64
	// RestartCount is the attempt number recorded on the container.
	RestartCount int

	// Reason and Message explain the last termination (e.g. "OOMKilled").
	Reason  string
	Message string

	// User is the identity the runtime started the process with (CRI
	// ContainerStatus.User); nil when the runtime does not say.
	User *v1.ContainerUser

	// Resources are the instance's actuated requests and limits: what it
	// was created with (recorded on it), or what the last
	// UpdateContainerResources set on it (the allocation store's record);
	// nil for an instance without either record.
	Resources *v1.ResourceRequirements
	// ActualResources are the resources the runtime says the instance
	// runs with (CRI ContainerStatus.resources); nil when it says nothing.
	ActualResources *ContainerResources
}

// ContainerResources are a container's cgroup settings converted back to
// quantities. Matches the kubelet's kubecontainer.ContainerResources.
type ContainerResources struct {
	// CPURequest from cpu.shares, CPULimit from the CFS quota and period,
	// MemoryLimit from the memory limit; nil when unset. MemoryRequest,
	// which no cgroup holds, and any value the runtime does not report come
	// from the instance's actuated resources.
	CPURequest    *resource.Quantity
	CPULimit      *resource.Quantity
	MemoryRequest *resource.Quantity
	MemoryLimit   *resource.Quantity
}

// PodStatus is the runtime's view of one pod: every sandbox and every
// container instance it still has, including exited ones. It matches the
// kubelet's kubecontainer.PodStatus.
//
// Ordering contract: SandboxStatuses and ContainerStatuses are sorted newest
// first (by creation time), as the kubelet's getPodContainerStatuses and
// sandbox listing return them. The decision code relies on it: the first
// sandbox is the current one, and the first status with a name is that
// container's latest attempt. SortNewestFirst establishes the order.
type PodStatus struct {
	// ID is the pod's UID.
	ID        types.UID
	Name      string
	Namespace string
	// IPs of the pod, primary first (from the newest sandbox).
	IPs []string
	// SandboxStatuses of every sandbox of the pod, newest first.
	SandboxStatuses []*runtimeapi.PodSandboxStatus
	// ContainerStatuses of every container instance of the pod, newest
	// first.
	ContainerStatuses []*Status
}

// FindContainerStatusByName returns the latest status of the container
// named containerName, or nil if the runtime has none (never created, or
// garbage-collected). Matches the kubelet's PodStatus.FindContainerStatusByName.
func (ps *PodStatus) FindContainerStatusByName(containerName string) *Status {
	if ps == nil {
		return nil
	}
	for _, s := range ps.ContainerStatuses {
		if s.Name == containerName {
			return s
		}
	}
	return nil
}

// FindContainerStatusByID returns the status of the container instance id,
// or nil.
func (ps *PodStatus) FindContainerStatusByID(id ContainerID) *Status {
	if ps == nil {
		return nil
	}
	for _, s := range ps.ContainerStatuses {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// GetRunningContainerStatuses returns the statuses of the running container
// instances. Matches the kubelet's PodStatus.GetRunningContainerStatuses.
func (ps *PodStatus) GetRunningContainerStatuses() []*Status {
	if ps == nil {
		return nil
	}
	var running []*Status
	for _, s := range ps.ContainerStatuses {
		if s.State == ContainerStateRunning {
			running = append(running, s)
		}
	}
	return running
}
