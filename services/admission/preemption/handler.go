package preemption

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

const (
	// VictimReason is the status reason of a preempted pod (the kubelet's
	// events.PreemptContainer).
	VictimReason = "Preempting"
	// VictimMessage is the status message of a preempted pod.
	VictimMessage = "Preempted in order to admit critical pod"
)

// ErrNoVictims means no set of preemptable pods frees enough resources.
var ErrNoVictims = errors.New("no set of running pods found to reclaim resources")

// CriticalPodAdmissionHandler chooses victims for critical pods that failed
// admission for resources only.
type CriticalPodAdmissionHandler struct{}

var _ lifecycle.AdmissionFailureHandler = (*CriticalPodAdmissionHandler)(nil)

// HandleAdmissionFailure implements lifecycle.AdmissionFailureHandler as the
// kubelet's CriticalPodAdmissionHandler.HandleAdmissionFailure:
//   - a pod that is not critical keeps all its failures;
//   - a critical pod with any failure other than insufficient resources
//     keeps only those other failures, since preemption cannot fix them;
//   - otherwise the victims are chosen among attrs.OtherPods, or an error
//     wrapping ErrNoVictims says that even all preemptable pods would not
//     free enough.
func (c *CriticalPodAdmissionHandler) HandleAdmissionFailure(ctx context.Context, attrs *lifecycle.PodAdmitAttributes, failureReasons []lifecycle.PredicateFailureReason) ([]lifecycle.PredicateFailureReason, []*v1.Pod, error) {
	pod := attrs.Pod
	if !lifecycle.IsCriticalPod(pod) {
		return failureReasons, nil, nil
	}
	var nonResource []lifecycle.PredicateFailureReason
	var needs requirementList
	for _, r := range failureReasons {
		if ir, ok := r.(*lifecycle.InsufficientResourceError); ok {
			needs = append(needs, requirement{name: ir.ResourceName, quantity: ir.GetInsufficientAmount()})
			continue
		}
		nonResource = append(nonResource, r)
	}
	if len(nonResource) > 0 {
		return nonResource, nil, nil
	}
	victims, err := getPodsToPreempt(pod, attrs.OtherPods, needs)
	if err != nil {
		return nil, nil, fmt.Errorf("preemption: error finding a set of pods to preempt: %w", err)
	}
	names := make([]string, len(victims))
	for i, v := range victims {
		names[i] = v.Namespace + "/" + v.Name
	}
	logctx.From(ctx).Info("chose pods to preempt for critical pod",
		zap.String("pod", pod.Namespace+"/"+pod.Name),
		zap.Strings("victims", names),
		zap.String("insufficientResources", needs.String()))
	return nil, victims, nil
}
