package syncloop

import (
	"context"
	"sort"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/worker"
)

// HandlePodAdditions records new pods, admits them in creation order and
// starts their workers. A rejected pod gets phase Failed with the admission
// reason and no worker. Matches the kubelet's HandlePodAdditions.
func (k *Kubelet) HandlePodAdditions(ctx context.Context, pods []*v1.Pod) {
	log := logctx.From(ctx)
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
	})
	for _, pod := range pods {
		k.podManager.AddPod(pod)
		k.mu.Lock()
		if _, ok := k.firstSeen[pod.UID]; !ok {
			k.firstSeen[pod.UID] = time.Now()
		}
		k.mu.Unlock()
		if pod.DeletionTimestamp == nil && !k.workers.IsKnown(pod.UID) {
			res, err := k.opts.Admitter.Admit(ctx, pod, k.activePods(pod))
			if err != nil {
				log.Error("admission failed, pod not started", zap.String("pod", pod.Namespace+"/"+pod.Name), zap.Error(err))
				continue
			}
			if !res.Admit {
				k.rejectPod(ctx, pod, res.Reason, res.Message)
				continue
			}
		}
		if k.opts.Prober != nil && pod.DeletionTimestamp == nil {
			k.opts.Prober.AddPod(pod)
		}
		k.workers.UpdatePod(worker.UpdatePodOptions{UpdateType: worker.SyncPodCreate, Pod: pod})
	}
}

// activePods are the pods admitted and not terminating, except pod itself.
func (k *Kubelet) activePods(except *v1.Pod) []*v1.Pod {
	var active []*v1.Pod
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, p := range k.podManager.GetPods() {
		if p.UID == except.UID || k.rejected[p.UID] || k.workers.IsPodTerminationRequested(p.UID) {
			continue
		}
		active = append(active, p)
	}
	return active
}

// rejectPod fails a pod admission refused, as the kubelet's rejectPod.
func (k *Kubelet) rejectPod(ctx context.Context, pod *v1.Pod, reason, message string) {
	logctx.From(ctx).Info("pod rejected by admission", zap.String("pod", pod.Namespace+"/"+pod.Name),
		zap.String("reason", reason), zap.String("message", message))
	k.mu.Lock()
	k.rejected[pod.UID] = true
	k.mu.Unlock()
	s := pod.Status.DeepCopy()
	s.Phase = v1.PodFailed
	s.Reason = reason
	s.Message = "Pod was rejected: " + message
	k.podManager.SetPodStatus(pod.UID, *s)
	k.opts.Recorder.Eventf(pod, v1.EventTypeWarning, reason, "%s", message)
}

// HandlePodUpdates passes changed pods (including ones being deleted) to
// their workers. Matches the kubelet's HandlePodUpdates.
func (k *Kubelet) HandlePodUpdates(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		k.podManager.UpdatePod(pod)
		k.mu.Lock()
		rejected := k.rejected[pod.UID]
		k.mu.Unlock()
		if pod.DeletionTimestamp != nil && (rejected || k.workers.IsPodKnownTerminated(pod.UID)) {
			// Nothing runs any more (a finished pod, or one admission
			// refused): the deletion completes at once, as the kubelet's
			// status manager deletes a terminated pod from the API.
			if err := k.finalize(ctx, pod); err != nil {
				logctx.From(ctx).Error("cannot complete the deletion", zap.String("pod", pod.Namespace+"/"+pod.Name), zap.Error(err))
			}
			continue
		}
		if rejected {
			continue
		}
		k.workers.UpdatePod(worker.UpdatePodOptions{UpdateType: worker.SyncPodUpdate, Pod: pod})
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
		k.mu.Unlock()
		if k.workers.IsKnown(pod.UID) {
			k.workers.UpdatePod(worker.UpdatePodOptions{UpdateType: worker.SyncPodKill, Pod: pod})
		}
	}
}

// HandlePodReconcile records a status-only change from the source. Sync
// owns the status of its pods, so only the pod object is refreshed.
func (k *Kubelet) HandlePodReconcile(ctx context.Context, pods []*v1.Pod) {
	for _, pod := range pods {
		k.podManager.UpdatePod(pod)
	}
}
