// Package qos computes a pod's quality-of-service class (Guaranteed,
// Burstable, BestEffort) as the kubelet does. The kubelet's helper lives in
// k8s.io/kubernetes (pkg/apis/core/v1/helper/qos), which is not importable as
// a library, so the rule is written here and matched to GetPodQOS and
// ComputePodQOS there.
//
// Pods are expected to be defaulted already (a container with only limits
// has had its requests set from them by API defaulting), as they are when
// they reach the kubelet.
package qos

import (
	v1 "k8s.io/api/core/v1"
)

// computeResources are the only resources that decide the QoS class.
var computeResources = [...]v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}

// GetPodQOS returns pod.Status.QOSClass when it is set, because the class of a
// running pod never changes, and otherwise computes it (the kubelet's
// GetPodQOS).
func GetPodQOS(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputePodQOS(pod)
}

// ComputePodQOS derives the class from the pod's requests and limits (the
// kubelet's ComputePodQOS):
//   - pod-level resources, when set, alone decide the class;
//   - otherwise every init and regular container is classified on its own:
//     any Burstable container, or a mix of BestEffort and Guaranteed
//     containers, makes the pod Burstable;
//   - a container is Guaranteed when cpu and memory each have a non-zero
//     request equal to the limit, BestEffort when it sets neither.
//
// Ephemeral containers cannot set resources and are ignored.
func ComputePodQOS(pod *v1.Pod) v1.PodQOSClass {
	if pod.Spec.Resources != nil {
		return classOf(pod.Spec.Resources)
	}
	var class v1.PodQOSClass
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := classOf(&list[i].Resources)
			switch {
			case c == v1.PodQOSBurstable:
				return v1.PodQOSBurstable
			case class == "":
				class = c
			case class != c:
				return v1.PodQOSBurstable
			}
		}
	}
	if class == "" {
		// A pod without containers; it cannot run, but needs a class.
		return v1.PodQOSBestEffort
	}
	return class
}

// classOf classifies one set of requirements.
func classOf(r *v1.ResourceRequirements) v1.PodQOSClass {
	var class v1.PodQOSClass
	for _, name := range computeResources {
		req, lim := r.Requests[name], r.Limits[name]
		if req.Cmp(lim) != 0 {
			// At least one of them is set, and they differ.
			return v1.PodQOSBurstable
		}
		c := v1.PodQOSGuaranteed
		if req.IsZero() {
			c = v1.PodQOSBestEffort
		}
		if class != "" && class != c {
			// cpu pinned but memory unset, or the other way round.
			return v1.PodQOSBurstable
		}
		class = c
	}
	return class
}
