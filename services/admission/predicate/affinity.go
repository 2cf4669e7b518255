package predicate

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// matchesNodeAffinity checks spec.nodeSelector and the required node
// affinity, as the scheduler's AdmissionCheck does with
// GetRequiredNodeAffinity(pod).Match. A selector that does not parse counts
// as not matching, as there.
func matchesNodeAffinity(pod *v1.Pod, node *v1.Node) bool {
	ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	return ok
}

// matchesNodeName checks spec.nodeName, as the scheduler's nodename.Fits: an
// unset name matches any node.
func matchesNodeName(pod *v1.Pod, node *v1.Node) bool {
	return pod.Spec.NodeName == "" || pod.Spec.NodeName == node.Name
}
