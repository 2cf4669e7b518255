package status

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// Condition reasons; the kubelet's constants of the same names
// (pkg/kubelet/status/generate.go).
const (
	UnknownContainerStatuses = "UnknownContainerStatuses"
	PodCompleted             = "PodCompleted"
	PodFailed                = "PodFailed"
	ContainersNotReady       = "ContainersNotReady"
	ContainersNotInitialized = "ContainersNotInitialized"
	ReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// kubeletConditions are the condition types the kubelet owns: it writes
// them, and keeps the API's values of every other type. Matches
// kubetypes.PodConditionByKubelet with PodReadyToStartContainers and
// RestartAllContainersOnContainerExits enabled.
var kubeletConditions = map[v1.PodConditionType]bool{
	v1.PodScheduled:              true,
	v1.PodReady:                  true,
	v1.PodInitialized:            true,
	v1.ContainersReady:           true,
	v1.PodResizeInProgress:       true,
	v1.PodResizePending:          true,
	v1.PodReadyToStartContainers: true,
	v1.AllContainersRestarting:   true,
}

// podConditionByKubelet matches kubetypes.PodConditionByKubelet.
func podConditionByKubelet(t v1.PodConditionType) bool { return kubeletConditions[t] }

// podConditionSharedByKubelet matches kubetypes.PodConditionSharedByKubelet:
// DisruptionTarget is set by the eviction paths of both the kubelet and the
// control plane.
func podConditionSharedByKubelet(t v1.PodConditionType) bool { return t == v1.DisruptionTarget }

// generateContainersReadyCondition: True when every regular container and
// sidecar is ready. Matches the kubelet's GenerateContainersReadyCondition:
// a Succeeded pod whose containers are all known reports PodCompleted, a
// Failed pod PodFailed; otherwise the unknown and unready containers are
// named ("containers with unready status: [a b]").
func generateContainersReadyCondition(pod *v1.Pod, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.ContainersReady, ObservedGeneration: pod.Generation}
	if statuses == nil {
		cond.Status, cond.Reason = v1.ConditionFalse, UnknownContainerStatuses
		return cond
	}
	var unknown, unready []string
	check := func(name string) {
		cs, ok := getContainerStatus(statuses, name)
		switch {
		case !ok:
			unknown = append(unknown, name)
		case !cs.Ready:
			unready = append(unready, name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if container.IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			check(pod.Spec.InitContainers[i].Name)
		}
	}
	for i := range pod.Spec.Containers {
		check(pod.Spec.Containers[i].Name)
	}

	if (phase == v1.PodSucceeded && len(unknown) == 0) || phase == v1.PodFailed {
		return terminalPhaseCondition(v1.ContainersReady, pod, phase)
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(unready) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unready status: %s", unready))
	}
	if len(msgs) > 0 {
		cond.Status, cond.Reason, cond.Message = v1.ConditionFalse, ContainersNotReady, strings.Join(msgs, ", ")
		return cond
	}
	cond.Status = v1.ConditionTrue
	return cond
}

// generatePodReadyCondition: ContainersReady, and then every readiness gate's
// condition True. Matches the kubelet's GeneratePodReadyCondition.
func generatePodReadyCondition(pod *v1.Pod, conditions []v1.PodCondition, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	containersReady := generateContainersReadyCondition(pod, statuses, phase)
	cond := v1.PodCondition{Type: v1.PodReady, ObservedGeneration: pod.Generation}
	if containersReady.Status != v1.ConditionTrue {
		cond.Status, cond.Reason, cond.Message = containersReady.Status, containersReady.Reason, containersReady.Message
		return cond
	}
	var msgs []string
	for _, rg := range pod.Spec.ReadinessGates {
		c := findCondition(conditions, rg.ConditionType)
		switch {
		case c == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(rg.ConditionType)))
		case c.Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(rg.ConditionType), c.Status))
		}
	}
	if len(msgs) > 0 {
		cond.Status, cond.Reason, cond.Message = v1.ConditionFalse, ReadinessGatesNotReady, strings.Join(msgs, ", ")
		return cond
	}
	cond.Status = v1.ConditionTrue
	return cond
}

// NeedToReconcilePodReadiness reports whether a pod with readiness gates
// shows a Ready condition other than the one its own status now implies:
// someone else changed a gate's condition (status.conditions), and the pod
// must be synced for Ready to follow. A pod without a Ready condition yet
// needs nothing. Matches the kubelet status manager's
// NeedToReconcilePodReadiness; init container statuses count too, as in
// generateAPIPodStatus, so a sidecar's readiness is weighed the same way.
func NeedToReconcilePodReadiness(pod *v1.Pod) bool {
	if len(pod.Spec.ReadinessGates) == 0 {
		return false
	}
	cur := findCondition(pod.Status.Conditions, v1.PodReady)
	if cur == nil {
		return false
	}
	all := append(append([]v1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	want := generatePodReadyCondition(pod, pod.Status.Conditions, all, pod.Status.Phase)
	return cur.Status != want.Status || cur.Message != want.Message
}

// generatePodInitializedCondition: True when every ordinary init container
// completed and every sidecar started, or once any regular container has
// run. Matches the kubelet's GeneratePodInitializedCondition, including
// PodCompleted for a Succeeded pod and "containers with incomplete status:
// [a]". A pod initialized before (old says so) stays initialized: an
// in-place restart sends its init containers back to waiting, and a pod is
// never uninitialized (the kubelet's RestartAllContainersOnContainerExits
// path, on by default in v1.36).
func generatePodInitializedCondition(pod *v1.Pod, old *v1.PodStatus, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.PodInitialized, ObservedGeneration: pod.Generation}
	if statuses == nil && len(pod.Spec.InitContainers) > 0 {
		cond.Status, cond.Reason = v1.ConditionFalse, UnknownContainerStatuses
		return cond
	}
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs, ok := getContainerStatus(statuses, c.Name)
		if !ok {
			unknown = append(unknown, c.Name)
			continue
		}
		if !isInitContainerInitialized(c, &cs) {
			incomplete = append(incomplete, c.Name)
		}
	}
	if phase == v1.PodSucceeded && len(unknown) == 0 {
		cond.Status, cond.Reason = v1.ConditionTrue, PodCompleted
		return cond
	}
	// A regular container has run, so initialization completed before;
	// a sidecar restarting since does not undo it.
	if hasAnyRegularContainerStarted(&pod.Spec, statuses) {
		cond.Status = v1.ConditionTrue
		return cond
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(incomplete) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with incomplete status: %s", incomplete))
	}
	if len(msgs) > 0 {
		if c := findCondition(old.Conditions, v1.PodInitialized); c != nil && c.Status == v1.ConditionTrue {
			cond.Status = v1.ConditionTrue
			return cond
		}
		cond.Status, cond.Reason, cond.Message = v1.ConditionFalse, ContainersNotInitialized, strings.Join(msgs, ", ")
		return cond
	}
	cond.Status = v1.ConditionTrue
	return cond
}

// RestartAllContainersStarted is the reason of AllContainersRestarting=True:
// a container exited and matched a RestartAllContainers rule. The kubelet's
// constant.
const RestartAllContainersStarted = "RestartAllContainersStarted"

// generateAllContainersRestartingCondition says whether the pod is being
// restarted in place: False with PodCompleted or PodFailed once the pod is
// terminal; True (RestartAllContainersStarted) while a restart is asked for
// (ShouldAllContainersRestart) and the runtime still holds some of its
// containers; False once none asks for it or all are removed, which lets
// the next sync start them again. Matches the kubelet's
// GenerateAllContainersRestartingCondition; only pods with a
// RestartAllContainers rule carry it.
func generateAllContainersRestartingCondition(pod *v1.Pod, podStatus *container.PodStatus, old *v1.PodStatus, phase v1.PodPhase) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}
	switch {
	case phase == v1.PodSucceeded:
		cond.Reason = PodCompleted
	case phase == v1.PodFailed:
		cond.Reason = PodFailed
	case container.ShouldAllContainersRestart(pod, podStatus, old) && !container.AllContainersRestartCleanedUp(pod, podStatus):
		cond.Status, cond.Reason, cond.Message = v1.ConditionTrue, RestartAllContainersStarted, "container exited with restart policy rule"
	}
	return cond
}

// isInitContainerInitialized: a sidecar once started, an ordinary init
// container once ready (exited 0). Matches the kubelet's function of the
// same name.
func isInitContainerInitialized(c *v1.Container, cs *v1.ContainerStatus) bool {
	if container.IsRestartableInitContainer(c) {
		return cs.Started != nil && *cs.Started
	}
	return cs.Ready
}

// generatePodReadyToStartContainersCondition: True while the pod has a
// usable sandbox (networking configured). Matches the kubelet's
// GeneratePodReadyToStartContainersCondition.
func generatePodReadyToStartContainersCondition(pod *v1.Pod, podStatus *container.PodStatus, sandboxChanged func(*v1.Pod, *container.PodStatus) bool) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.PodReadyToStartContainers, ObservedGeneration: pod.Generation, Status: v1.ConditionFalse}
	changed := !sandboxReady(pod, podStatus)
	if sandboxChanged != nil {
		changed = sandboxChanged(pod, podStatus)
	}
	if !changed {
		cond.Status = v1.ConditionTrue
	}
	return cond
}

// sandboxReady is the fallback for Inputs.PodSandboxChanged: the pod has
// exactly one ready sandbox, it is the newest, its network namespace mode
// matches hostNetwork, and a pod-network sandbox has an IP. These are the
// conditions of the kubelet's PodSandboxChanged, negated; kuberuntime's
// podSandboxChanged is the implementation to pass in.
func sandboxReady(pod *v1.Pod, podStatus *container.PodStatus) bool {
	if podStatus == nil || len(podStatus.SandboxStatuses) == 0 {
		return false
	}
	ready := 0
	for _, s := range podStatus.SandboxStatuses {
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	newest := podStatus.SandboxStatuses[0]
	wantMode := runtimeapi.NamespaceMode_POD
	if pod.Spec.HostNetwork {
		wantMode = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case ready != 1, newest.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY:
		return false
	case newest.GetLinux().GetNamespaces().GetOptions().GetNetwork() != wantMode:
		return false
	case !pod.Spec.HostNetwork && newest.GetNetwork() != nil && newest.GetNetwork().GetIp() == "":
		return false
	}
	return true
}

// terminalPhaseCondition is ContainersReady or Ready for a pod in a terminal
// phase: False with PodCompleted or PodFailed. Matches the kubelet's
// generateContainersReadyConditionForTerminalPhase and
// generatePodReadyConditionForTerminalPhase.
func terminalPhaseCondition(t v1.PodConditionType, pod *v1.Pod, phase v1.PodPhase) v1.PodCondition {
	cond := v1.PodCondition{Type: t, ObservedGeneration: pod.Generation, Status: v1.ConditionFalse}
	switch phase {
	case v1.PodFailed:
		cond.Reason = PodFailed
	case v1.PodSucceeded:
		cond.Reason = PodCompleted
	}
	return cond
}

func findCondition(conditions []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// replaceOrAppendCondition matches the kubelet's
// ReplaceOrAppendPodCondition.
func replaceOrAppendCondition(conditions []v1.PodCondition, c *v1.PodCondition) []v1.PodCondition {
	if existing := findCondition(conditions, c.Type); existing != nil {
		*existing = *c
		return conditions
	}
	return append(conditions, *c)
}

// isPodResizeInProgress reports whether a running resizable container
// (a regular container or a running init container: the API lets only
// sidecars be running after initialization) runs with other CPU or memory
// requests or limits than its allocation (the spec of pod, the allocated
// pod) says. A container that does not run is left out: it starts with its
// allocation. Matches the kubelet's IsPodResizeInProgress (container
// resources only).
func isPodResizeInProgress(pod *v1.Pod, podStatus *container.PodStatus) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			cs := podStatus.FindContainerStatusByName(list[i].Name)
			if cs == nil || cs.State != container.ContainerStateRunning {
				continue
			}
			actuated := cs.Resources
			if actuated == nil {
				actuated = &v1.ResourceRequirements{}
			}
			allocated := &list[i].Resources
			for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
				if !allocated.Requests[name].Equal(actuated.Requests[name]) || !allocated.Limits[name].Equal(actuated.Limits[name]) {
					return true
				}
			}
		}
	}
	return false
}

// generatePodResizeConditions are the pod's resize conditions: the
// allocation's PodResizePending while the node has not granted a resize
// (in.ResizePending), and PodResizeInProgress while a granted one is not
// yet applied to every running container (reason Error, with the message,
// when the last attempt failed: in.ResizeError). Matches the kubelet's
// status manager's resize conditions as SyncPod and the allocation manager
// set them.
func generatePodResizeConditions(pod *v1.Pod, podStatus *container.PodStatus, in *Inputs) []v1.PodCondition {
	var conds []v1.PodCondition
	if in.ResizePending != nil {
		conds = append(conds, *in.ResizePending)
	}
	if isPodResizeInProgress(pod, podStatus) {
		c := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: pod.Generation}
		if in.ResizeError != "" {
			c.Reason, c.Message = v1.PodReasonError, in.ResizeError
		}
		conds = append(conds, c)
	}
	return conds
}
