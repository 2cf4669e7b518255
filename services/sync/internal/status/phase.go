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

// getPhase computes the pod's phase from its API container statuses (regular
// and init). It matches the kubelet's getPhase with the ContainerRestartRules
// feature off (its default):
//
//   - an ordinary init container that failed under restartPolicy Never fails
//     the pod;
//   - an ordinary init container not yet completed (absent, running, waiting
//     without a previous failure) keeps the pod Pending, and so does a
//     sidecar not yet started until a regular container has run in the
//     current sandbox (podHasInitialized);
//   - a waiting regular container (or sidecar) that never ran keeps it
//     Pending;
//   - with everything started and something running, Running;
//   - with everything stopped: for a terminal pod (not static) Succeeded if
//     every regular container exited 0, else Failed; otherwise Running
//     under Always (it restarts), Succeeded if all succeeded, Failed under
//     Never, Running under OnFailure (the failures restart).
//
// Sidecars count as running while they run but never as stopped: a pod whose
// regular containers completed is Succeeded even if its sidecars were killed
// with a non-zero code.
func getPhase(pod *v1.Pod, info []v1.ContainerStatus, podIsTerminal, podHasInitialized bool) v1.PodPhase {
	spec := pod.Spec
	pendingRestartableInitContainers := 0
	pendingRegularInitContainers := 0
	failedInitialization := 0

	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if container.IsRestartableInitContainer(c) {
			continue
		}
		cs, ok := getContainerStatus(info, c.Name)
		switch {
		case !ok:
			pendingRegularInitContainers++
		case cs.State.Running != nil:
			pendingRegularInitContainers++
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failedInitialization++
			}
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				if cs.LastTerminationState.Terminated.ExitCode != 0 {
					failedInitialization++
				}
			} else {
				pendingRegularInitContainers++
			}
		default:
			pendingRegularInitContainers++
		}
	}

	unknown, running, waiting, stopped, succeeded := 0, 0, 0, 0, 0

	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !container.IsRestartableInitContainer(c) {
			continue
		}
		cs, ok := getContainerStatus(info, c.Name)
		switch {
		case !ok:
			unknown++
		case cs.State.Running != nil:
			if cs.Started == nil || !*cs.Started {
				pendingRestartableInitContainers++
			}
			running++
		case cs.State.Terminated != nil:
			// A stopped sidecar does not count toward the phase.
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated == nil {
				pendingRestartableInitContainers++
				waiting++
			}
		default:
			pendingRestartableInitContainers++
			unknown++
		}
	}

	for i := range spec.Containers {
		cs, ok := getContainerStatus(info, spec.Containers[i].Name)
		switch {
		case !ok:
			unknown++
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil:
			if cs.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}

	if failedInitialization > 0 && spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}

	switch {
	case pendingRegularInitContainers > 0,
		// Once a regular container has run in this sandbox, a restarting
		// sidecar must not send the pod back to Pending.
		pendingRestartableInitContainers > 0 && !podHasInitialized,
		waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if podIsTerminal && !isStaticPod(pod) {
			// Nothing will restart, whatever the policy.
			if stopped == succeeded {
				return v1.PodSucceeded
			}
			return v1.PodFailed
		}
		switch {
		case spec.RestartPolicy == v1.RestartPolicyAlways:
			return v1.PodRunning
		case stopped == succeeded:
			return v1.PodSucceeded
		case spec.RestartPolicy == v1.RestartPolicyNever:
			return v1.PodFailed
		default:
			// OnFailure with a failure: it is restarting.
			return v1.PodRunning
		}
	default:
		return v1.PodPending
	}
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
