package lifecycle

import (
	v1 "k8s.io/api/core/v1"
)

// Pod annotations and priorities the critical-pod rules read, with the
// kubelet's values (pkg/kubelet/types, pkg/apis/scheduling).
const (
	// ConfigSourceAnnotationKey names the source a pod came from.
	ConfigSourceAnnotationKey = "kubernetes.io/config.source"
	// ConfigMirrorAnnotationKey marks a mirror pod.
	ConfigMirrorAnnotationKey = "kubernetes.io/config.mirror"
	// APIServerSource is the source value of pods that came from the API
	// server; any other source makes a pod static.
	APIServerSource = "api"
	// SystemCriticalPriority is the lowest priority of critical pods
	// (system-cluster-critical; system-node-critical is above it).
	SystemCriticalPriority int32 = 2 * 1000000000
)

// IsStaticPod reports whether the pod came from a source other than the API
// server (a manifest file or URL), as the kubelet's types.IsStaticPod: a pod
// without the source annotation is not static.
func IsStaticPod(pod *v1.Pod) bool {
	source, ok := pod.Annotations[ConfigSourceAnnotationKey]
	return ok && source != APIServerSource
}

// IsMirrorPod reports whether the pod is the API server's mirror of a static
// pod, as the kubelet's types.IsMirrorPod.
func IsMirrorPod(pod *v1.Pod) bool {
	_, ok := pod.Annotations[ConfigMirrorAnnotationKey]
	return ok
}

// IsCriticalPod reports whether the pod is static, mirror, or has a priority
// of at least SystemCriticalPriority, as the kubelet's types.IsCriticalPod.
func IsCriticalPod(pod *v1.Pod) bool {
	if IsStaticPod(pod) || IsMirrorPod(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// Preemptable reports whether preemptor may preempt preemptee: a critical pod
// preempts any non-critical pod, otherwise a strictly higher priority is
// needed, as the kubelet's types.Preemptable.
func Preemptable(preemptor, preemptee *v1.Pod) bool {
	if IsCriticalPod(preemptor) && !IsCriticalPod(preemptee) {
		return true
	}
	if preemptor != nil && preemptor.Spec.Priority != nil &&
		preemptee != nil && preemptee.Spec.Priority != nil {
		return *preemptor.Spec.Priority > *preemptee.Spec.Priority
	}
	return false
}
