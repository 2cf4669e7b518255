package syncloop

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/status"
	"github.com/splitlet/splitlet/services/sync/internal/worker"
)

// terminalStatus is how a pod killed by the node itself (preemption,
// eviction) must end: phase Failed with reason and message, and a
// DisruptionTarget condition (reason TerminationByKubelet). It plays the
// part of the PodStatusFunc the kubelet passes to killPodNow, which
// SyncTerminatingPod applies to every status it generates.
type terminalStatus struct {
	reason, message  string
	conditionMessage string
}

// killPodWithStatus asks pod's worker to terminate it with grace (nil: the
// pod's own) and makes its status ts from now on. It does not wait. Matches
// the kubelet's killPodNow minus the wait (see waitTerminated).
func (k *Kubelet) killPodWithStatus(pod *v1.Pod, ts terminalStatus, grace *int64) {
	k.mu.Lock()
	k.terminal[pod.UID] = &ts
	k.mu.Unlock()
	// The status is not published now: SyncTerminatingPod applies it once
	// the containers are stopped, as the kubelet's status manager holds
	// back a terminal phase while containers may still run (the event is
	// recorded at once by the callers).
	k.workers.UpdatePod(worker.UpdatePodOptions{
		UpdateType:     worker.SyncPodKill,
		Pod:            pod,
		KillPodOptions: &worker.KillPodOptions{PodTerminationGracePeriodSecondsOverride: grace},
	})
}

// applyTerminalStatus sets what the kubelet's PodStatusFunc of an eviction
// or preemption sets.
func applyTerminalStatus(s *v1.PodStatus, ts *terminalStatus) {
	s.Phase = v1.PodFailed
	s.Reason = ts.reason
	s.Message = ts.message
	for _, c := range s.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue {
			return // set once, by whoever disrupted the pod first
		}
	}
	setCondition(s, v1.PodCondition{
		Type: v1.DisruptionTarget, Status: v1.ConditionTrue,
		Reason: v1.PodReasonTerminationByKubelet, Message: ts.conditionMessage,
	})
}

// terminalStatusFor returns the status a node-initiated kill imposes on the
// pod, if any.
func (k *Kubelet) terminalStatusFor(pod *v1.Pod) *terminalStatus {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.terminal[pod.UID]
}

// eviction returns ts as the status package's forced eviction, nil for nil.
func (ts *terminalStatus) eviction() *status.Eviction {
	if ts == nil {
		return nil
	}
	return &status.Eviction{Reason: ts.reason, Message: ts.message}
}

// EvictPod implements Evictor for the eviction manager of splitlet-admission:
// a Warning event with the reason and message, then the kill with the
// eviction status (phase Failed, reason, message, DisruptionTarget with
// the message) and the grace period override. Critical pods (static,
// mirror, or of system-critical priority) are refused, as the kubelet's
// evictPod refuses them. Matches the kubelet eviction manager's evictPod.
func (k *Kubelet) EvictPod(ctx context.Context, ref PodRef, reason, message string, gracePeriodOverride *int64) error {
	pod := k.findPod(ref)
	if pod == nil || !k.workers.IsKnown(pod.UID) || k.workers.IsPodKnownTerminated(pod.UID) {
		return fmt.Errorf("evict %s/%s: not a pod sync runs: %w", ref.Namespace, ref.Name, errdefs.ErrNotFound)
	}
	if defaults.IsCriticalPod(pod) {
		return fmt.Errorf("evict %s/%s: cannot evict a critical pod: %w", ref.Namespace, ref.Name, errdefs.ErrFailedPrecondition)
	}
	logctx.From(ctx).Info("evicting pod", zap.String("pod", pod.Namespace+"/"+pod.Name),
		zap.String("reason", reason), zap.String("message", message))
	k.opts.Recorder.Eventf(pod, v1.EventTypeWarning, reason, "%s", message)
	k.killPodWithStatus(pod, terminalStatus{reason: reason, message: message, conditionMessage: message}, gracePeriodOverride)
	return nil
}
