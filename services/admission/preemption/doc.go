// Package preemption is the kubelet's critical-pod preemption: when a
// critical pod (static, mirror, or system-critical priority) fails admission
// only for lack of resources, it picks active pods to stop so that the
// critical pod fits.
//
// It chooses exactly as the kubelet's CriticalPodAdmissionHandler and
// getPodsToPreempt do, but does not stop anything itself: it hands the
// victims back through lifecycle.AdmissionFailureHandler, and the caller
// stops them with VictimReason and VictimMessage, then admits again.
package preemption
