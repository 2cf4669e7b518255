package apiserver

import (
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	"k8s.io/component-helpers/nodedeclaredfeatures/features/restartallcontainers"
	ndftypes "k8s.io/component-helpers/nodedeclaredfeatures/types"
)

// implementedGates are the feature gates behind node-declared features
// (the kubelet's NodeDeclaredFeatures, on by default in v1.36) whose
// behaviour sync implements. A v1.36 kube-scheduler only places a pod that
// needs such a feature on a Node that declares it, so sync declares exactly
// these; the others (in-place resize, user namespaces, DRA, ...) stay
// undeclared because sync does not do them.
var implementedGates = ndftypes.FeatureGateMap{
	restartallcontainers.RestartAllContainersOnContainerExits: true,
}

// declaredFeatures is the Node's status.declaredFeatures, discovered by the
// same framework the kubelet uses (discoverNodeDeclaredFeatures): sorted
// feature names.
func declaredFeatures() []string {
	return ndf.DefaultFramework.DiscoverNodeFeatures(&ndftypes.NodeConfiguration{FeatureGates: implementedGates})
}
