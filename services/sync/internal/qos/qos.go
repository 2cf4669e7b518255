// Package qos computes a pod's quality-of-service class (Guaranteed,
// Burstable, BestEffort) exactly as the kubelet does; admission, eviction
// ranking and cgroup placement all key off it.
package qos

import (
	v1 "k8s.io/api/core/v1"
)

// qosResources are the only resources that decide the class.
var qosResources = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}

// GetPodQOS returns the class recorded in status.qosClass, or computes it
// when the status has none. The API server records the class at creation
// and never changes it, so a recorded class wins even if a resize has since
// made the spec look different.
//
// Matches GetPodQOS in kubernetes pkg/apis/core/v1/helper/qos.
func GetPodQOS(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputePodQOS(pod)
}

// ComputePodQOS evaluates the spec:
//   - pod-level resources (spec.resources), when set, alone decide the class;
//   - otherwise every init and regular container is classified on its own
//     (ephemeral containers cannot have resources and are ignored): the pod
//     is Guaranteed if all are, BestEffort if all are, Burstable otherwise.
//
// A set of requirements is Guaranteed when cpu and memory both have a
// non-zero limit equal to the request, BestEffort when neither cpu nor
// memory is requested or limited, and Burstable otherwise. Requests are
// compared after defaulting; an undefaulted spec with limits and no
// requests therefore classifies as Burstable.
//
// Matches ComputePodQOS and resourceQOS in kubernetes
// pkg/apis/core/v1/helper/qos (PodLevelResources enabled, as it is by
// default since it went beta).
func ComputePodQOS(pod *v1.Pod) v1.PodQOSClass {
	if pod.Spec.Resources != nil {
		return requirementsQOS(pod.Spec.Resources)
	}
	var podQOS v1.PodQOSClass
	containers := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		containers = append(containers, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		containers = append(containers, &pod.Spec.Containers[i])
	}
	for _, c := range containers {
		q := requirementsQOS(&c.Resources)
		switch {
		case q == v1.PodQOSBurstable:
			return v1.PodQOSBurstable
		case podQOS == "":
			podQOS = q
		case podQOS != q:
			// One Guaranteed and one BestEffort container make a Burstable pod.
			return v1.PodQOSBurstable
		}
	}
	if podQOS == "" {
		// A pod without containers is invalid; classify it like the kubelet.
		return v1.PodQOSBestEffort
	}
	return podQOS
}

func requirementsQOS(r *v1.ResourceRequirements) v1.PodQOSClass {
	var class v1.PodQOSClass
	for _, name := range qosResources {
		req := r.Requests[name]
		lim := r.Limits[name]
		if !req.Equal(lim) {
			// At least one is non-zero and they differ.
			return v1.PodQOSBurstable
		}
		bestEffort := req.IsZero()
		switch {
		case class == "" && bestEffort:
			class = v1.PodQOSBestEffort
		case class == "":
			class = v1.PodQOSGuaranteed
		case bestEffort != (class == v1.PodQOSBestEffort):
			// cpu guaranteed but memory unset, or the reverse.
			return v1.PodQOSBurstable
		}
	}
	return class
}
