package syncloop

import (
	"context"
	"sort"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/qos"
	"github.com/splitlet/splitlet/services/sync/internal/nodefeatures"
	"github.com/splitlet/splitlet/services/sync/internal/status"
	"github.com/splitlet/splitlet/services/sync/internal/worker"
)

// HandlePodAdditions records new pods, admits them in creation order and
// starts their workers. Matches the kubelet's HandlePodAdditions: pods are
// sorted by creation time, and each is admitted against the active pods
// (canAdmitPod) before its worker starts; a rejected pod gets phase Failed
// with the admission reason and no worker (rejectPod); a pod admission could
// not decide on waits (waitForAdmission). Static pods go through admission
// too, as in the kubelet; admission treats them as critical.
//
// Consecutive pods that need admission are admitted together (admitPods:
// one call to a BatchAdmitter), with the same decisions as one by one.
func (k *Kubelet) HandlePodAdditions(ctx context.Context, pods []*v1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
	})
	var toAdmit []*v1.Pod
	for _, pod := range pods {
		k.podManager.AddPod(pod)
		k.mu.Lock()
		if _, ok := k.firstSeen[pod.UID]; !ok {
			k.firstSeen[pod.UID] = time.Now()
		}
		k.mu.Unlock()
		// As the kubelet: a pod already terminal (e.g. rejected or evicted
		// before a restart) is not admitted again; its worker only
		// confirms it is finished.
		if pod.DeletionTimestamp == nil && !k.workers.IsKnown(pod.UID) && !isTerminalPhase(pod.Status.Phase) {
			toAdmit = append(toAdmit, pod)
			continue
		}
		// The pods before this one are decided first, as one by one.
		k.admitPods(ctx, toAdmit)
		toAdmit = nil
		k.startPod(ctx, pod)
	}
	k.admitPods(ctx, toAdmit)
}

// startPod hands an admitted pod to the prober and its worker, recording
// its allocation first (the kubelet's allocation manager AddPod). A pod
// sync already ran (a restart) keeps the allocation it had; if its spec
// was resized meanwhile, the resize is decided now.
func (k *Kubelet) startPod(ctx context.Context, pod *v1.Pod) {
	if _, err := k.alloc.AddPod(pod); err != nil {
		logctx.From(ctx).Error("cannot record the pod's allocation", zap.String("pod", pod.Namespace+"/"+pod.Name), zap.Error(err))
	}
	k.handlePodResourcesResize(ctx, pod)
	if k.opts.Prober != nil && pod.DeletionTimestamp == nil {
		k.opts.Prober.AddPod(pod)
	}
	k.workers.UpdatePod(worker.UpdatePodOptions{UpdateType: worker.SyncPodCreate, Pod: pod, StartSpan: k.takeStartSpan(pod.UID)})
}

// rejectPod fails a pod admission refused, as the kubelet's rejectPod: a
// Warning event with the reason, and status phase Failed with the reason
// and "Pod was rejected: " + message. No container is started.
func (k *Kubelet) rejectPod(ctx context.Context, pod *v1.Pod, reason, message string) {
	logctx.From(ctx).Info("pod rejected by admission", zap.String("pod", pod.Namespace+"/"+pod.Name),
		zap.String("reason", reason), zap.String("message", message))
	k.endStartSpan(pod.UID, "rejected: "+reason)
	k.mu.Lock()
	k.rejected[pod.UID] = true
	delete(k.pendingAdmission, pod.UID)
	k.mu.Unlock()
	s := k.currentStatus(pod)
	s.QOSClass = qos.GetPodQOS(pod)
	s.Phase = v1.PodFailed
	s.Reason = reason
	s.Message = "Pod was rejected: " + message
	// A condition left from waiting for admission no longer applies.
	conds := s.Conditions[:0]
	for _, c := range s.Conditions {
		if !(c.Type == v1.PodScheduled && c.Reason == ReasonAdmissionUnavailable) {
			conds = append(conds, c)
		}
	}
	s.Conditions = conds
	k.podManager.SetPodStatus(pod.UID, s)
	k.opts.Recorder.Eventf(pod, v1.EventTypeWarning, reason, "%s", message)
}

// HandlePodUpdates passes changed pods (including ones being deleted) to
// their workers. Matches the kubelet's HandlePodUpdates.
func (k *Kubelet) HandlePodUpdates(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		oldPod := k.podManager.GetPodByUID(pod.UID)
		k.podManager.UpdatePod(pod)
		k.mu.Lock()
		// Neither a pod admission refused nor one waiting for admission
		// has a worker.
		rejected := k.rejected[pod.UID] || k.pendingAdmission[pod.UID]
		if pod.DeletionTimestamp != nil {
			delete(k.pendingAdmission, pod.UID)
		}
		k.mu.Unlock()
		if pod.DeletionTimestamp != nil && (rejected || k.workers.IsPodKnownTerminated(pod.UID)) {
			// Nothing runs any more (a finished pod, or one admission
			// refused or never decided on): the deletion completes at
			// once, as the kubelet's status manager deletes a terminated
			// pod from the API.
			if err := k.finalize(ctx, pod); err != nil {
				logctx.From(ctx).Error("cannot complete the deletion", zap.String("pod", pod.Namespace+"/"+pod.Name), zap.Error(err))
			}
			continue
		}
		if rejected {
			continue
		}
		// A changed spec may be a resize: decided before the worker
		// syncs, so that the sync applies it at once.
		k.handlePodResourcesResize(ctx, pod)
		if oldPod != nil {
			k.warnUndeclaredFeatures(ctx, oldPod, pod)
		}
		k.workers.UpdatePod(worker.UpdatePodOptions{UpdateType: worker.SyncPodUpdate, Pod: pod})
	}
}

// warnUndeclaredFeatures records a warning event when the update of oldPod
// to pod needs features the node does not declare, as the kubelet's
// HandlePodUpdates does with NodeDeclaredFeatures (beta, on in v1.36).
func (k *Kubelet) warnUndeclaredFeatures(ctx context.Context, oldPod, pod *v1.Pod) {
	message, err := nodefeatures.CheckUpdate(oldPod, pod)
	if err != nil {
		logctx.From(ctx).Error("cannot check the pod update's node features", zap.String("pod", pod.Namespace+"/"+pod.Name), zap.Error(err))
		return
	}
	if message != "" {
		logctx.From(ctx).Info("pod requires node features that are not available", zap.String("pod", pod.Namespace+"/"+pod.Name), zap.String("message", message))
		k.opts.Recorder.Eventf(pod, v1.EventTypeWarning, nodefeatures.FailedCheckReason, "%s", message)
	}
}

// HandlePodRemoves forgets pods that left their source and kills them;
// housekeeping removes their runtime leftovers once the workers finish.
// Matches the kubelet's HandlePodRemoves.
func (k *Kubelet) HandlePodRemoves(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		k.podManager.RemovePod(pod)
		k.opts.Recorder.Forget(pod.Namespace, pod.Name)
		k.mu.Lock()
		delete(k.firstSeen, pod.UID)
		delete(k.rejected, pod.UID)
		delete(k.pendingAdmission, pod.UID)
		delete(k.terminal, pod.UID)
		k.mu.Unlock()
		if k.workers.IsKnown(pod.UID) {
			k.workers.UpdatePod(worker.UpdatePodOptions{UpdateType: worker.SyncPodKill, Pod: pod})
		}
	}
}

// HandlePodReconcile records a status-only change from the source. Sync
// owns the status of its pods, so the pod object is refreshed and nothing
// more, except when the change moves a readiness gate's condition: then
// the pod's worker syncs it with its new status, so that Ready follows.
// Matches the kubelet's HandlePodReconcile (NeedToReconcilePodReadiness).
func (k *Kubelet) HandlePodReconcile(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		k.podManager.UpdatePod(pod)
		// Only a pod that has a worker: one admission refused or has not
		// decided on yet must not get one here.
		if status.NeedToReconcilePodReadiness(pod) && k.workers.IsKnown(pod.UID) {
			k.workers.UpdatePod(worker.UpdatePodOptions{UpdateType: worker.SyncPodSync, Pod: pod})
		}
	}
}
