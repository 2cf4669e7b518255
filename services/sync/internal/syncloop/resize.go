package syncloop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/worker"
)

// errResizeNeedsPreemption is why a resize that fits only without other
// pods waits: resizes preempt no one.
var errResizeNeedsPreemption = errors.New("the resized pod fits only if other pods are preempted")

// allocatedPod is pod with each container's resources replaced by its
// allocation: the pod as its worker syncs it and its status reports it,
// until the node grants a resize of its spec. Matches the kubelet's pod
// workers handing SyncPod the pod from UpdatePodFromAllocation.
func (k *Kubelet) allocatedPod(pod *v1.Pod) *v1.Pod {
	allocated, _ := k.alloc.UpdatePodFromAllocation(pod)
	return allocated
}

// handlePodResourcesResize decides on a resize of an admitted, running
// pod whose spec asks for other container resources than its allocation:
// the pod is judged by the Admitter as a new pod of the resized size
// beside the other active pods (with their allocations), as the kubelet's
// canAdmitPod runs its admit handlers for a resize. If it fits, the new
// resources become the allocation and the pod's worker applies them;
// otherwise the pod's status gets PodResizePending (Deferred, retried by
// housekeeping). Events tell which. Matches the kubelet's
// HandlePodUpdates -> allocation manager handlePodResourcesResize.
func (k *Kubelet) handlePodResourcesResize(ctx context.Context, pod *v1.Pod) {
	// A pod never admitted has no allocation, which the allocation
	// manager checks; one on its way out is not resized.
	if pod.DeletionTimestamp != nil || k.workers.IsPodTerminationRequested(pod.UID) {
		return
	}
	log := logctx.From(ctx).WithLazy(zap.String("pod", pod.Namespace+"/"+pod.Name))
	before, wasPending := k.alloc.PodResizePending(pod.UID)
	fit := func(resized *v1.Pod) (bool, string, string, error) {
		res, err := k.opts.Admitter.Admit(ctx, resized, k.activePods(resized, nil))
		switch {
		case err != nil:
			return false, "", "", fmt.Errorf("%w: %w", ErrAdmissionUnavailable, err)
		case len(res.Victims) > 0:
			return false, "", "", errResizeNeedsPreemption
		}
		return res.Admit, res.Reason, res.Message, nil
	}
	allocated, err := k.alloc.HandlePodResourcesResize(pod, fit)
	if err != nil {
		log.Error("cannot record the resized allocation", zap.Error(err))
	}
	if allocated {
		// A resize that shrinks the pod leaves room for deferred ones.
		k.resizeRetryDue = true
		log.Info("pod resize allocated", zap.Int64("generation", pod.Generation))
		k.opts.Recorder.Eventf(pod, v1.EventTypeNormal, events.ResizeStarted, "Pod resize started: generation %d", pod.Generation)
		k.clearResizeError(pod.UID)
		return
	}
	after, pending := k.alloc.PodResizePending(pod.UID)
	if pending && (!wasPending || before.Reason != after.Reason || before.ObservedGeneration != after.ObservedGeneration) {
		reason := events.ResizeDeferred
		if after.Reason == v1.PodReasonInfeasible {
			reason = events.ResizeInfeasible
		}
		log.Info("pod resize pending", zap.String("reason", after.Reason), zap.String("message", after.Message))
		k.opts.Recorder.Eventf(pod, v1.EventTypeWarning, reason, "Pod resize %s: %s", after.Reason, after.Message)
	}
}

// resizeRetryPeriod is how often deferred resizes are asked again when
// nothing made room for them: the kubelet's retryDelay. Each retry is an
// Admit call per deferred pod on the sync loop, so not every housekeeping
// pass.
const resizeRetryPeriod = 3 * time.Minute

// retryPendingResizes asks again for every Deferred resize, in the
// kubelet's order (SortPendingResizes), and wakes the pod's worker when the
// answer changed its status. Housekeeping calls it: it acts when a pod went
// away or a resize was granted since (resizeRetryDue), so a resize waiting
// for room gets it within a housekeeping period, and otherwise every
// resizeRetryPeriod. Matches the kubelet's RetryPendingResizes and its
// triggers.
func (k *Kubelet) retryPendingResizes(ctx context.Context) {
	now := time.Now()
	if !k.resizeRetryDue && now.Before(k.resizeRetryAt) {
		return
	}
	k.resizeRetryDue, k.resizeRetryAt = false, now.Add(resizeRetryPeriod)
	var pods []*v1.Pod
	for _, uid := range k.alloc.PendingResizes() {
		if pod := k.podManager.GetPodByUID(uid); pod != nil {
			pods = append(pods, pod)
		}
	}
	k.alloc.SortPendingResizes(pods)
	for _, pod := range pods {
		uid := pod.UID
		before, _ := k.alloc.PodResizePending(uid)
		k.handlePodResourcesResize(ctx, pod)
		after, still := k.alloc.PodResizePending(uid)
		if !still || after != before {
			k.workers.UpdatePod(worker.UpdatePodOptions{UpdateType: worker.SyncPodUpdate, Pod: pod})
		}
	}
}

// resizeError is why the pod's last in-place resize failed, for its
// PodResizeInProgress condition; empty when it did not.
func (k *Kubelet) resizeError(uid types.UID) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.resizeErrs[uid]
}

// setResizeError records the outcome of a sync's in-place resize: err nil
// clears an earlier failure. A new failure is a ResizeError event.
func (k *Kubelet) setResizeError(pod *v1.Pod, err error) {
	k.mu.Lock()
	old := k.resizeErrs[pod.UID]
	if err == nil {
		delete(k.resizeErrs, pod.UID)
	} else {
		k.resizeErrs[pod.UID] = err.Error()
	}
	k.mu.Unlock()
	if err != nil && old != err.Error() {
		k.opts.Recorder.Eventf(pod, v1.EventTypeWarning, events.ResizeError, "Pod resize error: %v", err)
	}
}

func (k *Kubelet) clearResizeError(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.resizeErrs, uid)
}
