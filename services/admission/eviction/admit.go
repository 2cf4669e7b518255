package eviction

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/qos"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

const (
	// Reason is the status reason of pods rejected (and, later, evicted)
	// because of node pressure, as the kubelet's eviction.Reason.
	Reason = "Evicted"
	// nodeConditionMessageFmt is the kubelet's message; %v prints the
	// condition list as "[DiskPressure]". The trailing space is the
	// kubelet's too.
	nodeConditionMessageFmt = "The node had condition: %v. "
)

// AdmitHandler rejects pods that are not safe to admit while the node is
// under pressure.
type AdmitHandler struct {
	pressure PressureSource
}

var _ lifecycle.PodAdmitHandler = (*AdmitHandler)(nil)

// NewAdmitHandler returns a handler that reads pressure from p.
func NewAdmitHandler(p PressureSource) *AdmitHandler {
	return &AdmitHandler{pressure: p}
}

// Admit implements lifecycle.PodAdmitHandler with the rules of the kubelet's
// managerImpl.Admit:
//   - no pressure admits every pod;
//   - critical pods (static, mirror, priority >= system-cluster-critical) are
//     always admitted, because the node needs them to recover;
//   - memory pressure alone admits pods that are not BestEffort, and
//     BestEffort pods that tolerate node.kubernetes.io/memory-pressure
//     with effect NoSchedule;
//   - any other pressure, alone or with memory pressure, rejects.
func (h *AdmitHandler) Admit(ctx context.Context, attrs *lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult {
	conditions := h.pressure.NodeConditions(ctx)
	if len(conditions) == 0 {
		return lifecycle.PodAdmitResult{Admit: true}
	}
	pod := attrs.Pod
	if lifecycle.IsCriticalPod(pod) {
		return lifecycle.PodAdmitResult{Admit: true}
	}
	onlyMemoryPressure := len(conditions) == 1 && slices.Contains(conditions, v1.NodeMemoryPressure)
	if onlyMemoryPressure {
		if qos.GetPodQOS(pod) != v1.PodQOSBestEffort {
			return lifecycle.PodAdmitResult{Admit: true}
		}
		taint := &v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
		// The comparison operators (Lt, Gt) cannot match this taint, which
		// has no numeric value, so enabling them would change nothing.
		if corev1helpers.TolerationsTolerateTaint(logr.Discard(), pod.Spec.Tolerations, taint, false) {
			return lifecycle.PodAdmitResult{Admit: true}
		}
	}
	logctx.From(ctx).Info("failed to admit pod to node under pressure",
		zap.String("pod", pod.Namespace+"/"+pod.Name),
		zap.Any("nodeConditions", conditions))
	return lifecycle.PodAdmitResult{
		Admit:   false,
		Reason:  Reason,
		Message: fmt.Sprintf(nodeConditionMessageFmt, conditions),
	}
}
