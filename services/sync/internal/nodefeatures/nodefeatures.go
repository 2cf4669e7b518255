// Package nodefeatures is the node's declared features (the kubelet's
// NodeDeclaredFeatures, beta and on by default in v1.36): what the Node
// declares in status.declaredFeatures, and the admit check that refuses a
// pod needing a feature the node does not declare. Both use the framework
// the kubelet uses, k8s.io/component-helpers/nodedeclaredfeatures.
package nodefeatures

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/extendwebsocketstokubelet"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/restartallcontainers"
	ndftypes "k8s.io/component-helpers/nodedeclaredfeatures/types"
)

// implementedGates are the feature gates behind node-declared features
// whose behaviour sync implements. A v1.36 kube-scheduler only places a
// pod that needs such a feature on a Node that declares it, so sync
// declares exactly these; the others (in-place resize of non-sidecar init
// containers and of pod-level resources, user namespaces, DRA, ...) stay
// undeclared because sync does not do them. A resize of regular containers
// and sidecars needs no declared feature.
var implementedGates = ndftypes.FeatureGateMap{
	restartallcontainers.RestartAllContainersOnContainerExits: true,
	// The node API serves kubectl's WebSockets itself, translating them
	// for the runtime's SPDY streaming server (nodeapi/streaming.go), so
	// the API server may pass them through rather than translate them.
	extendwebsocketstokubelet.ExtendWebSocketsToKubeletFeatureGate: true,
}

// KubeletVersion is the kubelet release sync tracks (the node API's
// /statusz reports it as the binary version).
const KubeletVersion = "1.36.3"

// kubeletVersion is KubeletVersion: a feature whose MaxVersion is older is
// assumed everywhere and never required, as the kubelet's own version
// decides in InferForPodScheduling.
var kubeletVersion = version.MustParse(KubeletVersion)

var (
	framework = ndf.DefaultFramework
	// declared is sorted, as DiscoverNodeFeatures returns it.
	declared    = framework.DiscoverNodeFeatures(&ndftypes.NodeConfiguration{FeatureGates: implementedGates})
	declaredSet = framework.MustMapSorted(declared)
)

// Declared is the Node's status.declaredFeatures (the kubelet's
// discoverNodeDeclaredFeatures): sorted feature names.
func Declared() []string { return slices.Clone(declared) }

// UnsupportedReason is the kubelet's PodFeatureUnsupported rejection reason.
const UnsupportedReason = "PodFeatureUnsupported"

// Admit says whether the node declares every feature pod needs. A refusal
// carries the kubelet's message. Matches the kubelet's
// declaredFeaturesAdmitHandler.Admit.
func Admit(pod *v1.Pod) (ok bool, message string) {
	reqs, err := framework.InferForPodScheduling(&ndf.PodInfo{Spec: &pod.Spec, Status: &pod.Status}, kubeletVersion)
	if err != nil {
		return false, fmt.Sprintf("Failed to infer pod's feature requirements: %v", err)
	}
	message, err = unsatisfied(reqs)
	if err != nil {
		return false, fmt.Sprintf("Failed to match pod's feature requirements against the node: %v", err)
	}
	return message == "", message
}

// unsatisfied is the kubelet's message naming the features in reqs the node
// does not declare, "" when it declares them all.
func unsatisfied(reqs ndf.FeatureSet) (string, error) {
	if reqs.IsEmpty() {
		return "", nil
	}
	match, err := framework.MatchNodeFeatureSet(reqs, declaredSet)
	if err != nil || match.IsMatch {
		return "", err
	}
	return "Pod requires node features that are not available: " + strings.Join(match.UnsatisfiedRequirements, ", "), nil
}

// FailedCheckReason is the reason of the kubelet's warning event for a pod
// update needing features the node does not declare
// (events.FailedNodeDeclaredFeaturesCheck).
const FailedCheckReason = "FailedNodeDeclaredFeaturesCheck"

// CheckUpdate returns the event message for an update of oldPod to newPod
// that needs features the node does not declare (a resize of a non-sidecar
// init container, of pod-level resources, ...), "" when it needs none
// missing. The caller only warns: the update still goes to the pod's
// worker, as in the kubelet's HandlePodUpdates.
func CheckUpdate(oldPod, newPod *v1.Pod) (message string, err error) {
	reqs, err := framework.InferForPodUpdate(&ndf.PodInfo{Spec: &oldPod.Spec, Status: &oldPod.Status},
		&ndf.PodInfo{Spec: &newPod.Spec, Status: &newPod.Status}, kubeletVersion)
	if err != nil {
		return "", fmt.Errorf("failed to infer required features for pod update: %w", err)
	}
	if message, err = unsatisfied(reqs); err != nil {
		return "", fmt.Errorf("failed to match pod features with the node: %w", err)
	}
	return message, nil
}
