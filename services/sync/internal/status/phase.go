package status

import (
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// configSourceAnnotationKey and apiserverSource are the kubelet's
// (pkg/kubelet/types); a pod with a config.source other than "api" is a
// static pod.
const (
	configSourceAnnotationKey = "kubernetes.io/config.source"
	apiserverSource           = "api"
)

// isStaticPod matches the kubelet's kubetypes.IsStaticPod: the pod came from
// a manifest file or URL rather than the API server.
func isStaticPod(pod *v1.Pod) bool {
	source, ok := pod.Annotations[configSourceAnnotationKey]
	return ok && source != apiserverSource
}

// RestartingAllContainers is the waiting and termination reason of a
// container removed by an in-place restart of its pod (a
// RestartAllContainers rule matched), the kubelet's constant.
const RestartingAllContainers = "RestartingAllContainers"

// getPhase computes the pod's phase from its API container statuses (regular
// and init). It matches the kubelet v1.36.3's getPhase with its default
// gates (ContainerRestartRules and RestartAllContainersOnContainerExits on):
//
//   - an ordinary init container that failed and will not restart (its
//     effective policy and rules on its exit code, ContainerShouldRestart;
//     a container removed by an in-place restart always restarts) fails the
//     pod;
//   - an ordinary init container not yet completed (absent, running, waiting
//     without a previous termination) keeps the pod Pending, and so does a
//     sidecar not yet started until a regular container has run in the
//     current sandbox (podHasInitialized);
//   - a waiting regular container (or sidecar) that never ran keeps it
//     Pending;
//   - with everything started and something running, Running;
//   - with everything stopped: for a terminal pod (not static) Succeeded if
//     every regular container exited 0, else Failed; otherwise Running if
//     any stopped container will restart, else Succeeded if all succeeded,
//     else Failed.
//
// Sidecars count as running while they run but never as stopped: a pod whose
// regular containers completed is Succeeded even if its sidecars were killed
// with a non-zero code.
func getPhase(pod *v1.Pod, info []v1.ContainerStatus, podIsTerminal, podHasInitialized bool) v1.PodPhase {
	spec := &pod.Spec
	pendingInit, failedInitNotRestartable := initContainerCounts(spec, info)
	c := sidecarCounts(spec, info)
	c.add(regularCounts(spec, info))

	if failedInitNotRestartable > 0 {
		return v1.PodFailed
	}
	switch {
	case pendingInit > 0,
		// Once a regular container has run in this sandbox, a restarting
		// sidecar must not send the pod back to Pending.
		c.pendingSidecars > 0 && !podHasInitialized,
		c.waiting > 0:
		return v1.PodPending
	case c.running > 0 && c.unknown == 0:
		return v1.PodRunning
	case c.running == 0 && c.stopped > 0 && c.unknown == 0:
		if podIsTerminal && !isStaticPod(pod) {
			// Nothing will restart, whatever the policy.
			if c.stopped == c.succeeded {
				return v1.PodSucceeded
			}
			return v1.PodFailed
		}
		switch {
		case c.stopped != c.stoppedNotRestartable:
			// At least one is on its way back.
			return v1.PodRunning
		case c.stopped == c.succeeded:
			return v1.PodSucceeded
		default:
			return v1.PodFailed
		}
	default:
		return v1.PodPending
	}
}

// phaseCounts are getPhase's counters over sidecars and regular containers.
type phaseCounts struct {
	unknown, running, waiting, stopped, stoppedNotRestartable, succeeded int
	pendingSidecars                                                      int
}

func (c *phaseCounts) add(o phaseCounts) {
	c.unknown += o.unknown
	c.running += o.running
	c.waiting += o.waiting
	c.stopped += o.stopped
	c.stoppedNotRestartable += o.stoppedNotRestartable
	c.succeeded += o.succeeded
	c.pendingSidecars += o.pendingSidecars
}

// willRestart reports whether a container that terminated as t runs again:
// its effective policy and rules say so, or it was removed by an in-place
// restart of the pod.
func willRestart(c *v1.Container, spec *v1.PodSpec, t *v1.ContainerStateTerminated) bool {
	return container.ContainerShouldRestart(c, spec, t.ExitCode) || t.Reason == RestartingAllContainers
}

// lastTermination is the termination a container status shows: its current
// state, or, while it waits to run again, its previous one.
func lastTermination(cs v1.ContainerStatus) *v1.ContainerStateTerminated {
	if cs.State.Terminated != nil {
		return cs.State.Terminated
	}
	if cs.State.Waiting != nil {
		return cs.LastTerminationState.Terminated
	}
	return nil
}

// initContainerCounts counts the ordinary init containers still to
// complete, and those that failed for good.
func initContainerCounts(spec *v1.PodSpec, info []v1.ContainerStatus) (pending, failedNotRestartable int) {
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if container.IsRestartableInitContainer(c) {
			continue
		}
		cs, ok := getContainerStatus(info, c.Name)
		if !ok || cs.State.Running != nil {
			pending++
			continue
		}
		t := lastTermination(cs)
		switch {
		case t == nil:
			pending++
		case t.ExitCode != 0 && !willRestart(c, spec, t):
			failedNotRestartable++
		}
	}
	return pending, failedNotRestartable
}

// sidecarCounts counts the sidecars: running ones, and those not yet
// started. A stopped sidecar does not count toward the phase.
func sidecarCounts(spec *v1.PodSpec, info []v1.ContainerStatus) phaseCounts {
	var n phaseCounts
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !container.IsRestartableInitContainer(c) {
			continue
		}
		cs, ok := getContainerStatus(info, c.Name)
		switch {
		case !ok:
			n.unknown++
		case cs.State.Running != nil:
			if cs.Started == nil || !*cs.Started {
				n.pendingSidecars++
			}
			n.running++
		case cs.State.Terminated != nil:
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated == nil {
				n.pendingSidecars++
				n.waiting++
			}
		default:
			n.pendingSidecars++
			n.unknown++
		}
	}
	return n
}

// regularCounts counts the regular containers by state; a stopped one is
// one whose status shows a termination, and it is not restartable when its
// effective policy and rules keep it down.
func regularCounts(spec *v1.PodSpec, info []v1.ContainerStatus) phaseCounts {
	var n phaseCounts
	for i := range spec.Containers {
		c := &spec.Containers[i]
		cs, ok := getContainerStatus(info, c.Name)
		if !ok {
			n.unknown++
			continue
		}
		if cs.State.Running != nil {
			n.running++
			continue
		}
		t := lastTermination(cs)
		switch {
		case t != nil:
			n.stopped++
			if !willRestart(c, spec, t) {
				n.stoppedNotRestartable++
			}
			// Only a current termination counts as a success; a
			// container waiting to run again has not succeeded.
			if cs.State.Terminated != nil && t.ExitCode == 0 {
				n.succeeded++
			}
		case cs.State.Waiting != nil:
			n.waiting++
		default:
			n.unknown++
		}
	}
	return n
}

// getContainerStatus finds a status by container name, as podutil's
// GetContainerStatus.
func getContainerStatus(statuses []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	for i := range statuses {
		if statuses[i].Name == name {
			return statuses[i], true
		}
	}
	return v1.ContainerStatus{}, false
}

// hasAnyActiveRegularContainerStarted reports whether a regular container
// has an instance in the pod's current sandbox, which means initialization
// completed in that sandbox. Matches the kubelet's
// HasAnyActiveRegularContainerStarted, which reads the runtime's
// ActiveContainerStatuses (the containers of the newest sandbox).
// container.Status does not record its sandbox, so an instance counts as
// active when it was created no earlier than the newest sandbox; with no
// sandbox, nothing is active.
func hasAnyActiveRegularContainerStarted(spec *v1.PodSpec, podStatus *container.PodStatus) bool {
	if podStatus == nil || len(podStatus.SandboxStatuses) == 0 {
		return false
	}
	newest := podStatus.SandboxStatuses[0].GetCreatedAt()
	for _, s := range podStatus.SandboxStatuses[1:] {
		newest = max(newest, s.GetCreatedAt())
	}
	names := make(map[string]bool, len(spec.Containers))
	for i := range spec.Containers {
		names[spec.Containers[i].Name] = true
	}
	for _, s := range podStatus.ContainerStatuses {
		if names[s.Name] && s.CreatedAt.UnixNano() >= newest {
			return true
		}
	}
	return false
}

// hasAnyRegularContainerStarted reports whether any regular container's API
// status shows it running or terminated. Matches the kubelet's
// kubecontainer.HasAnyRegularContainerStarted.
func hasAnyRegularContainerStarted(spec *v1.PodSpec, statuses []v1.ContainerStatus) bool {
	names := make(map[string]bool, len(spec.Containers))
	for i := range spec.Containers {
		names[spec.Containers[i].Name] = true
	}
	for i := range statuses {
		if names[statuses[i].Name] && (statuses[i].State.Running != nil || statuses[i].State.Terminated != nil) {
			return true
		}
	}
	return false
}

// hasAnyRegularContainerCreated reports whether the runtime has any instance
// of a regular container in a known state. Matches the kubelet's
// kuberuntime HasAnyRegularContainerCreated.
func hasAnyRegularContainerCreated(pod *v1.Pod, podStatus *container.PodStatus) bool {
	for i := range pod.Spec.Containers {
		s := podStatus.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if s == nil {
			continue
		}
		switch s.State {
		case container.ContainerStateCreated, container.ContainerStateRunning, container.ContainerStateExited:
			return true
		}
	}
	return false
}
