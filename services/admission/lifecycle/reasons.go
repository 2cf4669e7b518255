package lifecycle

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Rejection reasons, spelled as the kubelet spells them in
// pkg/kubelet/lifecycle/predicate.go so that pod statuses read the same.
const (
	// PodOSSelectorNodeLabelDoesNotMatch: the pod's kubernetes.io/os label
	// differs from the node's OS.
	PodOSSelectorNodeLabelDoesNotMatch = "PodOSSelectorNodeLabelDoesNotMatch"
	// PodOSNotSupported: the pod's spec.os differs from the node's OS.
	PodOSNotSupported = "PodOSNotSupported"
	// InvalidNodeInfo: the node object could not be obtained.
	InvalidNodeInfo = "InvalidNodeInfo"
	// SupplementalGroupsPolicyNotSupported: the pod asks for
	// supplementalGroupsPolicy Strict and the node does not support it.
	SupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"
	// UnexpectedAdmissionError: a failure that fits no other reason.
	UnexpectedAdmissionError = "UnexpectedAdmissionError"
	// UnknownReason: predicates failed without saying why.
	UnknownReason = "UnknownReason"
	// UnexpectedPredicateFailureType: a predicate returned a reason of a type
	// the handler does not know.
	UnexpectedPredicateFailureType = "UnexpectedPredicateFailureType"

	// InsufficientResourcePrefix prefixes the reason for a resource
	// shortfall: OutOf<resource name>.
	InsufficientResourcePrefix = "OutOf"
	OutOfCPU                   = "OutOfcpu"
	OutOfMemory                = "OutOfmemory"
	OutOfEphemeralStorage      = "OutOfephemeral-storage"
	OutOfPods                  = "OutOfpods"
)

// PredicateFailureReason is one reason a predicate rejected a pod, as the
// kubelet's lifecycle.PredicateFailureReason.
type PredicateFailureReason interface {
	GetReason() string
}

// InsufficientResourceError says which resource did not fit and by how much.
// Quantities are in the scheduler's units: millicores for cpu, bytes for
// memory and storage, counts otherwise.
type InsufficientResourceError struct {
	ResourceName v1.ResourceName
	Requested    int64
	Used         int64
	Capacity     int64
}

var _ PredicateFailureReason = (*InsufficientResourceError)(nil)

func (e *InsufficientResourceError) Error() string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
		e.ResourceName, e.Requested, e.Used, e.Capacity)
}

// GetReason implements PredicateFailureReason.
func (e *InsufficientResourceError) GetReason() string {
	return fmt.Sprintf("Insufficient %v", e.ResourceName)
}

// GetInsufficientAmount is how much more of the resource the pod needs than
// is free.
func (e *InsufficientResourceError) GetInsufficientAmount() int64 {
	return e.Requested - (e.Capacity - e.Used)
}

// AdmitReason is the pod status reason for this shortfall: OutOfcpu,
// OutOfmemory, OutOfephemeral-storage, OutOfpods or OutOf<resource>.
func (e *InsufficientResourceError) AdmitReason() string {
	switch e.ResourceName {
	case v1.ResourceCPU:
		return OutOfCPU
	case v1.ResourceMemory:
		return OutOfMemory
	case v1.ResourceEphemeralStorage:
		return OutOfEphemeralStorage
	case v1.ResourcePods:
		return OutOfPods
	default:
		return InsufficientResourcePrefix + string(e.ResourceName)
	}
}

// PredicateFailureError is a non-resource predicate failure: the scheduler
// plugin's name and its reason text.
type PredicateFailureError struct {
	PredicateName string
	PredicateDesc string
}

var _ PredicateFailureReason = (*PredicateFailureError)(nil)

func (e *PredicateFailureError) Error() string {
	return fmt.Sprintf("Predicate %s failed: %s", e.PredicateName, e.PredicateDesc)
}

// GetReason implements PredicateFailureReason.
func (e *PredicateFailureError) GetReason() string {
	return e.PredicateDesc
}

// ResultFromReasons turns predicate failures into the rejection the kubelet
// reports: only the first reason counts (predicateAdmitHandler.Admit).
func ResultFromReasons(reasons []PredicateFailureReason) PodAdmitResult {
	if len(reasons) == 0 {
		return PodAdmitResult{
			Reason:  UnknownReason,
			Message: "GeneralPredicates failed due to unknown reason, which is unexpected.",
		}
	}
	switch r := reasons[0].(type) {
	case *PredicateFailureError:
		return PodAdmitResult{Reason: r.PredicateName, Message: r.Error()}
	case *InsufficientResourceError:
		return PodAdmitResult{Reason: r.AdmitReason(), Message: r.Error()}
	default:
		return PodAdmitResult{
			Reason:  UnexpectedPredicateFailureType,
			Message: fmt.Sprintf("GeneralPredicates failed due to %v, which is unexpected.", r),
		}
	}
}
