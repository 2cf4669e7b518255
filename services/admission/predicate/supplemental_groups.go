package predicate

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// checkSupplementalGroupsPolicy rejects a pod asking for
// supplementalGroupsPolicy Strict on a node whose status does not declare
// support for it, as the kubelet's
// rejectPodAdmissionBasedOnSupplementalGroupsPolicy with the feature at beta
// or later: running it anyway would silently merge the image's groups.
func checkSupplementalGroupsPolicy(pod *v1.Pod, node *v1.Node) (lifecycle.PodAdmitResult, bool) {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.SupplementalGroupsPolicy == nil || *sc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyStrict {
		return lifecycle.PodAdmitResult{}, false
	}
	f := node.Status.Features
	if f != nil && f.SupplementalGroupsPolicy != nil && *f.SupplementalGroupsPolicy {
		return lifecycle.PodAdmitResult{}, false
	}
	return lifecycle.PodAdmitResult{
		Reason:  lifecycle.SupplementalGroupsPolicyNotSupported,
		Message: fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict),
	}, true
}
