package predicate

import (
	v1 "k8s.io/api/core/v1"
)

// ActivePodInfo is what predicate admission needs of an active pod: what it
// holds on the node (activePodRequests, already summed into the scheduler's
// units) and its host ports (podHostPorts). Both depend on the pod object
// alone, and computing the requests (component-helpers' PodRequests) is the
// most expensive part of an admission with a full node, so a caller that
// sees the same pod object on every admission computes it once, with
// NewActivePodInfo, and supplies it through Options.ActivePodInfos. It is
// read-only once made.
type ActivePodInfo struct {
	requests  resources
	hostPorts []v1.ContainerPort
}

// NewActivePodInfo summarises an active pod. The pod must not change
// afterwards, or the summary no longer describes it.
func NewActivePodInfo(pod *v1.Pod) *ActivePodInfo {
	info := &ActivePodInfo{hostPorts: podHostPorts(pod)}
	info.requests.add(activePodRequests(pod))
	return info
}

// ActivePodInfoSource supplies summaries computed earlier.
type ActivePodInfoSource interface {
	// ActivePodInfos sets infos[i] to the summary of the very pod object
	// pods[i], for each pod it has one of, and leaves the others nil; the
	// handler computes those for this admission only. infos is as long as
	// pods. One call for all the active pods of an admission: a node's
	// thousands of pods are looked up under one lock, not one each.
	ActivePodInfos(pods []*v1.Pod, infos []*ActivePodInfo)
}

// activePodInfos summarises otherPods, through h's source where it can.
func (h *Handler) activePodInfos(otherPods []*v1.Pod) []*ActivePodInfo {
	infos := make([]*ActivePodInfo, len(otherPods))
	if h.infos != nil {
		h.infos.ActivePodInfos(otherPods, infos)
	}
	for i, p := range otherPods {
		if infos[i] == nil {
			infos[i] = NewActivePodInfo(p)
		}
	}
	return infos
}
