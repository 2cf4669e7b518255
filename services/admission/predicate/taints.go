package predicate

import (
	"context"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// hasUntoleratedNoExecuteTaint reports whether the node has a NoExecute
// taint the pod does not tolerate. The kubelet looks only at NoExecute:
// NoSchedule and PreferNoSchedule are the scheduler's business, and a pod on
// this node was placed here in spite of them on purpose (generalFilter).
func (h *Handler) hasUntoleratedNoExecuteTaint(_ context.Context, pod *v1.Pod, node *v1.Node) bool {
	// The helper logs only unparsable numeric toleration values; those
	// tolerations then simply do not match, which is all admission needs.
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(),
		node.Spec.Taints, pod.Spec.Tolerations,
		func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute },
		h.compareTolerations)
	return untolerated
}
