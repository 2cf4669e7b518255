// Package container is sync's runtime-side view of pods and containers: what
// the container runtime reports (PodStatus, Status, sandbox statuses), and the
// small pure helpers the kubelet's decision code needs on top of it
// (HashContainer, ShouldContainerBeRestarted).
//
// It mirrors the kubelet's pkg/kubelet/container package, keeping the kubelet's
// names where they mean the same thing, so that computePodActions in
// ../kuberuntime reads like the kubelet's. Nothing here talks to a runtime:
// SyncPod builds a PodStatus from CRI answers and hands it to the decision code.
package container
