package kuberuntime

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// ContainerKillReason is the machine-readable cause of a container kill. It
// selects the grace period when SyncPod kills (a probe's own
// terminationGracePeriodSeconds wins for probe kills, as in the kubelet's
// setTerminationGracePeriod).
type ContainerKillReason string

// The reasons match the kubelet's containerKillReason values. A kill for a
// changed spec carries no reason (empty), as in the kubelet.
const (
	ReasonStartupProbe        ContainerKillReason = "StartupProbe"
	ReasonLivenessProbe       ContainerKillReason = "LivenessProbe"
	ReasonFailedPostStartHook ContainerKillReason = "FailedPostStartHook"
	ReasonUnknown             ContainerKillReason = "Unknown"
	// ReasonRestartAllContainers kills a container (with an override of
	// 0, so the 2 s floor) before its removal when the pod restarts in place.
	ReasonRestartAllContainers ContainerKillReason = "RestartAllContainers"
)

// ContainerToKillInfo says what to kill and why. It matches the kubelet's
// containerToKillInfo.
type ContainerToKillInfo struct {
	// Name of the container in the pod spec.
	Name string
	// Container is the spec entry (regular, init or ephemeral) the instance
	// belongs to; SyncPod needs it for preStop hooks and grace periods.
	Container *v1.Container
	// Message is human readable; SyncPod puts it in the Killing event.
	Message string
	// Reason is set for probe and unknown-state kills.
	Reason ContainerKillReason
}

// ContainerToRemoveInfo is one container instance to remove from the
// runtime when the pod restarts in place. It matches the kubelet's
// containerToRemoveInfo.
type ContainerToRemoveInfo struct {
	// ContainerID is the instance to remove.
	ContainerID container.ContainerID
	// Container is its spec entry (init or regular).
	Container *v1.Container
	// Kill says the instance is not exited and must be killed first.
	Kill bool
}

// PodActions is what SyncPod must do to the pod, as computePodActions
// decided it. It matches the kubelet's podActions, without
// UpdatePodLevelResources (sync does not resize pod-level resources) and
// without NextInitContainerToStart, which only the kubelet's
// LegacySidecarContainers path sets: sync always takes the sidecar-aware path
// (computeInitContainerActions) and reports init containers in
// InitContainersToStart.
//
// How a terminal pod is signalled: a pod that must not run any more (an init
// container failed under restartPolicy Never, or every container is done and
// none may restart) gets KillPod=true with CreateSandbox=false and nothing to
// start. The pod's phase (Failed or Succeeded) is not decided here: the status
// manager derives it from the container statuses, as the kubelet's
// getPhase does.
type PodActions struct {
	// KillPod stops every running container (regular, init, ephemeral) and
	// the sandbox.
	KillPod bool
	// CreateSandbox asks for a new sandbox; KillPod is then true as well and
	// the old init containers are to be purged before starting afresh.
	CreateSandbox bool
	// SandboxID is the existing sandbox to start containers in; empty when
	// there is none or when the old one is unusable (network mode changed).
	SandboxID string
	// Attempt is the attempt number for the sandbox to create (or of the
	// current one).
	Attempt uint32

	// InitContainersToStart lists indexes into pod.Spec.InitContainers to
	// start, in spec order: at most one ordinary init container (the next
	// in line), plus sidecars to (re)start.
	InitContainersToStart []int
	// ContainersToStart lists indexes into pod.Spec.Containers to start.
	ContainersToStart []int
	// ContainersToKill maps running (or unknown) container instances to kill
	// to why. Containers killed to be replaced also appear in a ...ToStart
	// list.
	ContainersToKill map[container.ContainerID]ContainerToKillInfo
	// EphemeralContainersToStart lists indexes into
	// pod.Spec.EphemeralContainers to start.
	EphemeralContainersToStart []int
	// ContainersToReset lists, in order, every instance of the pod's init
	// and regular containers to kill (if running) and remove when the pod
	// restarts in place (RestartAllContainers); the instances whose exit
	// triggered it come last.
	ContainersToReset []ContainerToRemoveInfo
	// ContainersToUpdate lists, per resource (cpu, memory), the running
	// containers whose resources are updated in place, decreases first
	// (computePodResizeAction); nil when none.
	ContainersToUpdate map[v1.ResourceName][]ContainerToUpdateInfo
	// UpdatePodResources is true when a resize restarts a container
	// (resizePolicy RestartContainer).
	UpdatePodResources bool
}

// String renders the actions for logs, in the kubelet's podActions.String
// layout, with kills listed in a stable order.
func (p PodActions) String() string {
	ids := make([]container.ContainerID, 0, len(p.ContainersToKill))
	for id := range p.ContainersToKill {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b container.ContainerID) int {
		return strings.Compare(a.String(), b.String())
	})
	kills := make([]string, 0, len(ids))
	for _, id := range ids {
		info := p.ContainersToKill[id]
		kills = append(kills, fmt.Sprintf("%s(%s): %s", info.Name, id.ID, info.Message))
	}
	resets := make([]string, 0, len(p.ContainersToReset))
	for _, r := range p.ContainersToReset {
		resets = append(resets, fmt.Sprintf("%s(%s) kill=%t", r.Container.Name, r.ContainerID.ID, r.Kill))
	}
	var updates []string
	for _, name := range []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
		for _, u := range p.ContainersToUpdate[name] {
			updates = append(updates, fmt.Sprintf("%s:%s(%s)", name, u.Container.Name, u.ContainerID.ID))
		}
	}
	return fmt.Sprintf("KillPod: %t, CreateSandbox: %t, UpdatePodResources: %t, SandboxID: %q, Attempt: %d, InitContainersToStart: %v, ContainersToStart: %v, EphemeralContainersToStart: %v, ContainersToUpdate: [%s], ContainersToKill: [%s], ContainersToReset: [%s]",
		p.KillPod, p.CreateSandbox, p.UpdatePodResources, p.SandboxID, p.Attempt, p.InitContainersToStart, p.ContainersToStart,
		p.EphemeralContainersToStart, strings.Join(updates, "; "), strings.Join(kills, "; "), strings.Join(resets, "; "))
}
