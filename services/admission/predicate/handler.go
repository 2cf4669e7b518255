package predicate

import (
	"context"
	"fmt"
	"runtime"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// GetNodeFunc returns the current node object. It is called once per
// admission; errors reject the pod with InvalidNodeInfo. The returned node
// is only read.
type GetNodeFunc func(ctx context.Context) (*v1.Node, error)

// Options configure a Handler.
type Options struct {
	// GetNode supplies the node; required.
	GetNode GetNodeFunc
	// FailureHandler, when set, may recover from failed checks (critical-pod
	// preemption). Nil rejects on every failure.
	FailureHandler lifecycle.AdmissionFailureHandler
	// OS is the node's operating system as runtime.GOOS spells it; empty
	// means runtime.GOOS, which is what the kubelet compares against.
	OS string
	// EnableTaintComparisonOperators lets Lt/Gt tolerations match taints,
	// the kubelet's TaintTolerationComparisonOperators feature gate.
	EnableTaintComparisonOperators bool
	// ActivePodInfos, when set, supplies precomputed summaries of active
	// pods (see ActivePodInfo); nil computes them on every admission.
	ActivePodInfos ActivePodInfoSource
}

// Handler is the predicate admission handler.
type Handler struct {
	getNode            GetNodeFunc
	failureHandler     lifecycle.AdmissionFailureHandler
	os                 string
	compareTolerations bool
	infos              ActivePodInfoSource
}

var _ lifecycle.PodAdmitHandler = (*Handler)(nil)

// NewHandler returns a predicate admission handler.
func NewHandler(opts Options) *Handler {
	os := opts.OS
	if os == "" {
		os = runtime.GOOS
	}
	return &Handler{
		getNode:            opts.GetNode,
		failureHandler:     opts.FailureHandler,
		os:                 os,
		compareTolerations: opts.EnableTaintComparisonOperators,
		infos:              opts.ActivePodInfos,
	}
}

// Admit implements lifecycle.PodAdmitHandler, following the kubelet's
// predicateAdmitHandler.Admit.
func (h *Handler) Admit(ctx context.Context, attrs *lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult {
	log := logctx.From(ctx)
	node, err := h.getNode(ctx)
	if err == nil && node == nil {
		err = fmt.Errorf("no node object")
	}
	if err != nil {
		log.Error("cannot get node info", zap.Error(err))
		return lifecycle.PodAdmitResult{
			Reason:  lifecycle.InvalidNodeInfo,
			Message: "Kubelet cannot get node info.",
		}
	}
	pod := attrs.Pod

	// Checks that preemption cannot help come first, so that no pod is
	// preempted for a pod that would be rejected anyway.
	if r, rejected := h.checkOS(pod); rejected {
		return r
	}
	if r, rejected := checkSupplementalGroupsPolicy(pod, node); rejected {
		return r
	}

	reasons := h.generalFilter(ctx, removeMissingExtendedResources(pod, node), attrs.OtherPods, node)
	if len(reasons) == 0 {
		return lifecycle.PodAdmitResult{Admit: true}
	}
	if h.failureHandler == nil {
		return logRejection(log, pod, lifecycle.ResultFromReasons(reasons))
	}
	remaining, victims, err := h.failureHandler.HandleAdmissionFailure(ctx, attrs, reasons)
	if err != nil {
		log.Info("failed to admit pod, unexpected error while attempting to recover from admission failure",
			zap.String("pod", pod.Namespace+"/"+pod.Name), zap.Error(err))
		return lifecycle.PodAdmitResult{
			Reason:  lifecycle.UnexpectedAdmissionError,
			Message: fmt.Sprintf("Unexpected error while attempting to recover from admission failure: %v", err),
		}
	}
	switch {
	case len(remaining) > 0:
		return logRejection(log, pod, lifecycle.ResultFromReasons(remaining))
	case len(victims) > 0:
		// The kubelet would stop the victims here and admit; this process
		// cannot stop pods, so it reports the shortfall with the victims
		// whose removal resolves it.
		res := lifecycle.ResultFromReasons(reasons)
		res.Victims = victims
		return logRejection(log, pod, res)
	default:
		return lifecycle.PodAdmitResult{Admit: true}
	}
}

func logRejection(log *zap.Logger, pod *v1.Pod, res lifecycle.PodAdmitResult) lifecycle.PodAdmitResult {
	log.Debug("predicate failed on pod",
		zap.String("pod", pod.Namespace+"/"+pod.Name),
		zap.String("reason", res.Reason),
		zap.String("message", res.Message))
	return res
}

// generalFilter runs the checks preemption might help with, and returns every
// failure in the kubelet's order (generalFilter and AdmissionCheck with
// includeAllFailures).
func (h *Handler) generalFilter(ctx context.Context, pod *v1.Pod, otherPods []*v1.Pod, node *v1.Node) []lifecycle.PredicateFailureReason {
	var reasons []lifecycle.PredicateFailureReason
	others, used := h.summarize(ctx, otherPods)
	for _, r := range fits(pod, len(others), &used, node) {
		reasons = append(reasons, r)
	}
	if !matchesNodeAffinity(pod, node) {
		reasons = append(reasons, &lifecycle.PredicateFailureError{PredicateName: NodeAffinityName, PredicateDesc: ErrReasonNodeAffinity})
	}
	if !matchesNodeName(pod, node) {
		reasons = append(reasons, &lifecycle.PredicateFailureError{PredicateName: NodeNameName, PredicateDesc: ErrReasonNodeName})
	}
	if !fitsHostPorts(pod, others) {
		reasons = append(reasons, &lifecycle.PredicateFailureError{PredicateName: NodePortsName, PredicateDesc: ErrReasonNodePorts})
	}
	if !lifecycle.IsStaticPod(pod) && h.hasUntoleratedNoExecuteTaint(ctx, pod, node) {
		reasons = append(reasons, &lifecycle.PredicateFailureError{PredicateName: TaintTolerationName, PredicateDesc: ErrReasonTaintToleration})
	}
	return reasons
}
