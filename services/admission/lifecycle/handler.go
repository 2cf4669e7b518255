package lifecycle

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// PodAdmitAttributes is the context for a pod admission decision, as the
// kubelet's lifecycle.PodAdmitAttributes.
type PodAdmitAttributes struct {
	// Pod is the pod being evaluated for admission.
	Pod *v1.Pod
	// OtherPods are the pods already admitted and active on the node, not
	// including Pod itself.
	OtherPods []*v1.Pod
}

// PodAdmitResult is the outcome of a pod admission decision, as the kubelet's
// lifecycle.PodAdmitResult, plus the victims of critical-pod preemption.
type PodAdmitResult struct {
	// Admit is true when the pod may run on the node.
	Admit bool
	// Reason is a brief CamelCase reason for a rejection (e.g. OutOfcpu).
	Reason string
	// Message is a human-readable explanation of a rejection.
	Message string
	// Victims is set only on a rejection that critical-pod preemption can
	// resolve: stopping these active pods frees what the pod lacks. The caller
	// stops them (status reason VictimReason, message VictimMessage), then
	// runs admission again without them. A caller that does not preempt
	// simply reports Reason and Message, which are the kubelet's reason for
	// the original shortfall.
	Victims []*v1.Pod
}

// PodAdmitHandler decides whether a pod may run on the node.
//
// Admit must not mutate attrs; it returns a rejection rather than an error
// for every failure, using UnexpectedAdmissionError when nothing more precise
// applies, as the kubelet does.
type PodAdmitHandler interface {
	Admit(ctx context.Context, attrs *PodAdmitAttributes) PodAdmitResult
}

// AdmissionFailureHandler gets a chance to recover from predicate failures,
// as the kubelet's lifecycle.AdmissionFailureHandler. Unlike the kubelet's,
// it does not stop pods itself: it returns the victims whose removal would
// resolve the failures and leaves stopping them to the caller.
//
// It returns the reasons that still stand (nil when the victims resolve all
// of them) and an error when recovery was attempted but could not succeed.
type AdmissionFailureHandler interface {
	HandleAdmissionFailure(ctx context.Context, attrs *PodAdmitAttributes, failureReasons []PredicateFailureReason) (remaining []PredicateFailureReason, victims []*v1.Pod, err error)
}
