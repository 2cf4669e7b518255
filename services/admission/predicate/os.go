package predicate

import (
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// checkOS rejects pods meant for another operating system, as the kubelet's
// rejectPodAdmissionBasedOnOSSelector and rejectPodAdmissionBasedOnOSField.
//
// The kubelet compares the pod's kubernetes.io/os label (a label on the pod,
// not its node selector) with the node's label, but first overwrites a
// missing or different node label with runtime.GOOS, so in effect both
// compare with the OS the node runs; so does this check, without touching
// the node.
func (h *Handler) checkOS(pod *v1.Pod) (lifecycle.PodAdmitResult, bool) {
	if want, ok := pod.Labels[v1.LabelOSStable]; ok && want != h.os {
		return lifecycle.PodAdmitResult{
			Reason:  lifecycle.PodOSSelectorNodeLabelDoesNotMatch,
			Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
		}, true
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != h.os {
		return lifecycle.PodAdmitResult{
			Reason:  lifecycle.PodOSNotSupported,
			Message: "Failed to admit pod as the OS field doesn't match node OS",
		}, true
	}
	return lifecycle.PodAdmitResult{}, false
}
