package status

import (
	v1 "k8s.io/api/core/v1"
)

// TerminatePod returns status completed for a pod whose worker has finished
// terminating it, so that no container is left looking alive and the pod
// ends in a terminal phase. Matches the kubelet status manager's
// TerminatePod:
//   - once the pod has initialized (hasPodInitialized), every regular
//     container not terminated becomes Terminated ContainerStatusUnknown,
//     exit 137, "The container could not be located when the pod was
//     terminated": a status the runtime can no longer give must not read as
//     a success;
//   - init containers that were attempted (all but the trailing run of
//     never-started ones, and at least the first) get the same treatment;
//   - a Pending or Running phase becomes Failed, except for static pods.
//
// status is the last status generated for the pod; it is not modified.
func TerminatePod(pod *v1.Pod, status v1.PodStatus) v1.PodStatus {
	s := *status.DeepCopy()
	unknown := func() v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason:   ContainerStatusUnknown,
			Message:  messageNotLocatedTerminated,
			ExitCode: 137,
		}}
	}
	if hasPodInitialized(pod, &s) {
		for i := range s.ContainerStatuses {
			if s.ContainerStatuses[i].State.Terminated == nil {
				s.ContainerStatuses[i].State = unknown()
			}
		}
	}
	attempted := initializedContainers(s.InitContainerStatuses)
	for i := range attempted {
		if attempted[i].State.Terminated == nil {
			attempted[i].State = unknown()
		}
	}
	if !isStaticPod(pod) && !isTerminal(s.Phase) {
		s.Phase = v1.PodFailed
	}
	return s
}

// hasPodInitialized reports whether there is evidence that the pod's
// regular containers were ever started: no init containers, a regular
// container out of Waiting or with a previous termination, or the last init
// container completed with 0. Matches the kubelet's hasPodInitialized, which
// reads pod.Status; here the status being terminated is read as well, since
// sync's pod.Status may lag behind the generated one.
func hasPodInitialized(pod *v1.Pod, status *v1.PodStatus) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, st := range []*v1.PodStatus{&pod.Status, status} {
		for _, cs := range st.ContainerStatuses {
			if cs.LastTerminationState.Terminated != nil || cs.State.Waiting == nil {
				return true
			}
		}
		if l := len(st.InitContainerStatuses); l > 0 {
			last := st.InitContainerStatuses[l-1]
			if t := last.LastTerminationState.Terminated; t != nil && t.ExitCode == 0 {
				return true
			}
			if t := last.State.Terminated; t != nil && t.ExitCode == 0 {
				return true
			}
		}
	}
	return false
}

// initializedContainers returns the statuses except the trailing run of
// Waiting containers that never terminated (never attempted), and at least
// the first one. Matches the kubelet's initializedContainers.
func initializedContainers(statuses []v1.ContainerStatus) []v1.ContainerStatus {
	for i := len(statuses) - 1; i >= 0; i-- {
		if statuses[i].State.Waiting == nil || statuses[i].LastTerminationState.Terminated != nil {
			return statuses[:i+1]
		}
	}
	if len(statuses) > 0 {
		return statuses[:1]
	}
	return nil
}
