package syncloop

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/status"
	"github.com/splitlet/splitlet/services/sync/internal/worker"
)

var _ worker.SyncHandler = (*Kubelet)(nil)

// reasons adapts the runtime manager's waiting reasons to the status
// package.
type reasons struct{ rt Runtime }

var _ status.ReasonLookup = reasons{}

func (r reasons) Get(uid types.UID, name string) (status.WaitingReason, bool) {
	w, ok := r.rt.ContainerWaiting(uid, name)
	return status.WaitingReason{Reason: w.Reason, Message: w.Message}, ok
}

// oldPodStatus is the status a pod's new status is generated from: the
// last one generated (generated); after a restart of sync, the one its
// previous run kept (statuskeep); else the status the pod came with from
// its source.
// Matches the kubelet's generateAPIPodStatus, which takes the status
// manager's and falls back to pod.Status (the API server's copy), so that a
// restarted kubelet keeps startTime and the conditions' transition times.
func (k *Kubelet) oldPodStatus(pod *v1.Pod) (old v1.PodStatus, generated, ok bool) {
	if old, ok := k.podManager.GetPodStatus(pod.UID); ok {
		return old, true, true
	}
	if k.opts.KeptStatus != nil {
		if kept, ok := k.opts.KeptStatus(pod.UID); ok {
			return kept, false, true
		}
	}
	if pod.Status.Phase != "" {
		return pod.Status, false, true
	}
	return v1.PodStatus{}, false, false
}

// generateStatus reads the runtime's view of the pod, generates its API
// status and publishes it. The read goes into the status cache.
func (k *Kubelet) generateStatus(ctx context.Context, pod *v1.Pod, terminal bool) (*container.PodStatus, v1.PodStatus, error) {
	podStatus, _, err := k.readPodStatus(ctx, pod)
	if err != nil {
		return nil, v1.PodStatus{}, err
	}
	return podStatus, k.publishStatus(ctx, pod, podStatus, terminal), nil
}

// readPodStatus reads the pod's status from the runtime, stores it in the
// cache and returns it with the time the read started.
func (k *Kubelet) readPodStatus(ctx context.Context, pod *v1.Pod) (*container.PodStatus, time.Time, error) {
	readAt := time.Now()
	podStatus, err := k.runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("runtime status: %w", err)
	}
	k.cache.Set(pod.UID, podStatus, readAt)
	return podStatus, readAt, nil
}

// podStatusForSync returns the runtime status a sync of pod starts from,
// and when it was read: the cached status when it was read at or after the
// end of the pod's previous sync, else a fresh read. Matches the kubelet's
// podWorkerLoop, which takes podCache.GetNewerThan(uid, lastSyncTime),
// except that it reads instead of waiting for the PLEG.
//
// The first sync of a pod the runtime holds nothing of starts from an empty
// status without a read, as the kubelet's GetNewerThan answers a pod
// missing from its cache with an empty PodStatus once a relist is newer
// than the (zero) last sync time. It is safe only when nothing can exist:
// the pod has no cache entry (not even an invalidation), and a complete
// relist has run since sync started and neither it nor any later event
// showed anything of the pod (pleg.runtimeMayHold); only the pod's own
// worker creates sandboxes and containers for it, and this is its first
// sync. Before the first relist completes (sync just restarted, pods may
// already run) every first sync reads. empty reports that case: the
// runtime holds nothing of the pod but what this sync creates.
func (k *Kubelet) podStatusForSync(ctx context.Context, pod *v1.Pod) (podStatus *container.PodStatus, readAt time.Time, empty bool, err error) {
	now := time.Now()
	k.mu.Lock()
	since, synced := k.lastSync[pod.UID]
	k.mu.Unlock()
	if synced {
		if podStatus, readAt, ok := k.cache.GetNewerThan(pod.UID, since); ok {
			return podStatus, readAt, false, nil
		}
	} else if !k.cache.Has(pod.UID) && !k.pleg.runtimeMayHold(pod.UID) {
		return &container.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}, now, true, nil
	}
	podStatus, readAt, err = k.readPodStatus(ctx, pod)
	return podStatus, readAt, false, err
}

// knownStatusReader is an optional capability of a Runtime: reading the
// status of given sandboxes and containers without listing
// (kuberuntime.Manager.GetPodStatusOf).
type knownStatusReader interface {
	GetPodStatusOf(ctx context.Context, uid types.UID, name, namespace string, sandboxIDs, containerIDs []string) (*container.PodStatus, error)
}

var _ knownStatusReader = (*kuberuntime.Manager)(nil)

// readStatusAfterSync reads the pod's status after a SyncPod that acted and
// stores it in the cache. When the sync started from an empty runtime and
// succeeded, the pod's objects are exactly those it created, so their
// statuses are read without the two list calls of a full read; otherwise
// it is a full read (readPodStatus).
func (k *Kubelet) readStatusAfterSync(ctx context.Context, pod *v1.Pod, startedEmpty bool, res kuberuntime.SyncResult, syncErr error) (*container.PodStatus, time.Time, error) {
	kr, ok := k.runtime.(knownStatusReader)
	if !ok || !startedEmpty || syncErr != nil || res.CreatedSandbox == "" {
		return k.readPodStatus(ctx, pod)
	}
	readAt := time.Now()
	podStatus, err := kr.GetPodStatusOf(ctx, pod.UID, pod.Name, pod.Namespace, []string{res.CreatedSandbox}, res.CreatedContainers)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("runtime status: %w", err)
	}
	k.cache.Set(pod.UID, podStatus, readAt)
	return podStatus, readAt, nil
}

// setLastSync records that the pod's sync ended with a status read at t.
func (k *Kubelet) setLastSync(uid types.UID, t time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lastSync[uid] = t
}

// forgetPodStatus drops what the sync loop keeps about a removed pod's
// runtime status.
func (k *Kubelet) forgetPodStatus(uid types.UID) {
	k.mu.Lock()
	delete(k.lastSync, uid)
	k.mu.Unlock()
	k.cache.Delete(uid)
	// The pod's next first sync (a static pod re-added with the same
	// UID) must read what the runtime may still hold of it, until a relist
	// shows otherwise.
	k.pleg.touch(uid, time.Now())
}

// publishStatus generates the pod's API status from podStatus and publishes
// it; it returns the status in effect.
func (k *Kubelet) publishStatus(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, terminal bool) v1.PodStatus {
	// The status of a node-initiated kill applies once the pod is being
	// terminated (terminal: its containers were just killed).
	var ts *terminalStatus
	if terminal {
		ts = k.terminalStatusFor(pod)
	}
	in := status.Inputs{Reasons: reasons{k.runtime}, HostIPs: k.opts.HostIPs, PodIsTerminal: terminal, Eviction: ts.eviction()}
	if in.Eviction == nil {
		in.Eviction = k.activeDeadline.ShouldEvict(pod)
	}
	if k.opts.Prober != nil {
		in.Probes = k.opts.Prober
	}
	old, generated, ok := k.oldPodStatus(pod)
	if ok {
		in.OldStatus = &old
	}
	apiStatus := status.GenerateAPIPodStatus(pod, podStatus, in)
	if ts != nil {
		// The kubelet applies killPodNow's PodStatusFunc to the status
		// SyncTerminatingPod generates.
		applyTerminalStatus(&apiStatus, ts)
	}
	// The status manager's rules: a status in which a container terminated
	// for good runs again is dropped; an unchanged one is not republished.
	if err := status.CheckContainerStateTransition(in.OldStatus, &apiStatus, &pod.Spec); err != nil {
		logctx.From(ctx).Error("dropping a pod status that goes backwards", zap.Error(err))
		if !generated {
			k.podManager.SetPodStatus(pod.UID, *in.OldStatus)
		}
		return *in.OldStatus
	}
	// A status generated from one kept or given by the source is recorded
	// even when equal to it: the pod manager has none of this run yet.
	if !generated || status.NeedsUpdate(in.OldStatus, &apiStatus) {
		k.podManager.SetPodStatus(pod.UID, apiStatus)
	}
	if apiStatus.Phase == v1.PodRunning {
		k.observeStarted(pod.UID)
	}
	return apiStatus
}

func (k *Kubelet) observeStarted(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if seen, ok := k.firstSeen[uid]; ok {
		k.opts.Metrics.PodStartDuration.Observe(time.Since(seen).Seconds())
		delete(k.firstSeen, uid)
	}
}

// SyncPod makes a running pod match its spec. It generates and publishes the
// pod's status first; a pod whose phase is terminal (Succeeded or Failed)
// is reported as such and not acted on, so the worker terminates it.
// Otherwise the runtime syncs it, and if that changed the pod the status is
// read again and published, so watchers see the outcome without waiting for
// the next sync. Matches the kubelet's SyncPod.
//
// The status a sync starts from comes from the cache when it was read at or
// after the end of the pod's previous sync (podStatusForSync): a sync woken
// by a PLEG event or a resync then makes no runtime call unless it acts. The
// end of a sync is the read of the status it acted on, or, when it acted,
// the read after its actions; a sync thus never acts on a status older than
// what an earlier sync did.
func (k *Kubelet) SyncPod(ctx context.Context, updateType worker.UpdateType, pod *v1.Pod) (bool, error) {
	k.mu.Lock()
	k.syncing[pod.UID] = true
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		delete(k.syncing, pod.UID)
		k.mu.Unlock()
	}()
	podStatus, readAt, startedEmpty, err := k.podStatusForSync(ctx, pod)
	if err != nil {
		return false, err
	}
	apiStatus := k.publishStatus(ctx, pod, podStatus, false)
	if apiStatus.Phase == v1.PodSucceeded || apiStatus.Phase == v1.PodFailed {
		k.setLastSync(pod.UID, readAt)
		logctx.From(ctx).Info("pod is terminal", zap.String("phase", string(apiStatus.Phase)))
		return true, nil
	}
	if err := k.networkNotReady(pod); err != nil {
		k.setLastSync(pod.UID, readAt)
		return false, err
	}
	var probes kuberuntime.ProbeResults
	if k.opts.Prober != nil {
		probes = k.opts.Prober
	}
	// The kubelet's syncPod asks for an in-place restart when the status
	// it just generated carries AllContainersRestarting=True.
	restartAll := hasTrueCondition(&apiStatus, v1.AllContainersRestarting)
	res, syncErr := k.syncRuntime(ctx, pod, withAPIPodIPs(podStatus, &apiStatus), probes, restartAll)
	if res.Reset && syncErr == nil && k.workers != nil {
		// The containers are gone; start them again at once rather than
		// at the next event or resync, as the kubelet's syncPod requeues
		// the pod. The next sync sees an empty runtime and an unmarked
		// status, so this does not loop.
		k.workers.Wake(pod.UID)
	}
	switch {
	case res.Acted:
		after, afterAt, err := k.readStatusAfterSync(ctx, pod, startedEmpty, res, syncErr)
		if err != nil {
			// The next sync must not use a status read before this
			// one's actions.
			k.setLastSync(pod.UID, time.Now())
			if syncErr == nil {
				syncErr = err
			}
			break
		}
		k.setLastSync(pod.UID, afterAt)
		k.publishStatus(ctx, pod, after, false)
	case res.WaitingChanged:
		// Only a waiting reason changed: the status shows it, the runtime
		// read stays good.
		k.setLastSync(pod.UID, readAt)
		k.publishStatus(ctx, pod, podStatus, false)
	default:
		k.setLastSync(pod.UID, readAt)
	}
	return false, syncErr
}

// networkNotReadyErrorMsg is the kubelet's NetworkNotReadyErrorMsg.
const networkNotReadyErrorMsg = "network is not ready"

// networkNotReady holds a pod that needs the pod network while the
// runtime's network is not ready, with a NetworkNotReady event; the pod
// worker retries. A host-network pod goes on. Matches the kubelet's
// syncPod, after the status is generated and before anything is created.
func (k *Kubelet) networkNotReady(pod *v1.Pod) error {
	if k.opts.Network == nil || pod.Spec.HostNetwork {
		return nil
	}
	err := k.opts.Network.NetworkErrors()
	if err == nil {
		return nil
	}
	k.opts.Recorder.Eventf(pod, v1.EventTypeWarning, events.NetworkNotReady, "%s: %v", networkNotReadyErrorMsg, err)
	return fmt.Errorf("%s: %w", networkNotReadyErrorMsg, err)
}

// withAPIPodIPs returns podStatus with the pod IPs of apiStatus, which for
// a host-network pod are the node's (the runtime reports none for its
// sandbox): the runtime resolves containers' status.podIP(s) env from them.
// podStatus itself may be the cache's and is left alone. Matches what the
// kubelet's SyncPod does to podStatus.IPs before the runtime's SyncPod.
func withAPIPodIPs(podStatus *container.PodStatus, apiStatus *v1.PodStatus) *container.PodStatus {
	ps := *podStatus
	ps.IPs = make([]string, 0, len(apiStatus.PodIPs))
	for _, ip := range apiStatus.PodIPs {
		ps.IPs = append(ps.IPs, ip.IP)
	}
	if len(ps.IPs) == 0 && apiStatus.PodIP != "" {
		ps.IPs = []string{apiStatus.PodIP}
	}
	return &ps
}

// syncRuntime runs the runtime's SyncPod. A Runtime that cannot say whether
// it acted is taken to have acted.
func (k *Kubelet) syncRuntime(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, probes kuberuntime.ProbeResults, restartAll bool) (kuberuntime.SyncResult, error) {
	if rs, ok := k.runtime.(resultSyncer); ok {
		return rs.SyncPodWithResult(ctx, pod, podStatus, probes, restartAll)
	}
	return kuberuntime.SyncResult{Acted: true, WaitingChanged: true}, k.runtime.SyncPod(ctx, pod, podStatus, probes, restartAll)
}

// hasTrueCondition reports whether s carries condition t with status True.
func hasTrueCondition(s *v1.PodStatus, t v1.PodConditionType) bool {
	for _, c := range s.Conditions {
		if c.Type == t && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

// SyncTerminatingPod stops the pod's containers with the grace period, then
// its sandbox, and publishes the resulting status. Matches the kubelet's
// SyncTerminatingPod.
func (k *Kubelet) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriod *int64) error {
	log := logctx.From(ctx)
	if gracePeriod != nil {
		log.Info("terminating pod", zap.Int64("gracePeriod", *gracePeriod))
	} else {
		log.Info("terminating pod")
	}
	if k.opts.Prober != nil {
		// A terminating pod is probed no more (the kubelet's
		// SyncTerminatingPod).
		k.opts.Prober.RemovePod(pod)
	}
	if err := k.runtime.KillPod(ctx, pod, pod.UID, gracePeriod); err != nil {
		return err
	}
	podStatus, _, err := k.generateStatus(ctx, pod, true)
	if err != nil {
		return err
	}
	if running := podStatus.GetRunningContainerStatuses(); len(running) > 0 {
		return fmt.Errorf("pod still has %d running containers after kill", len(running))
	}
	return nil
}

// SyncTerminatedPod completes the status of a pod whose containers are all
// stopped (status.TerminatePod) and, for a deleted pod, tells its source it
// can be forgotten. Matches the kubelet's SyncTerminatedPod plus the status
// manager's deletion of the API object.
func (k *Kubelet) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error {
	if s, ok := k.podManager.GetPodStatus(pod.UID); ok {
		k.podManager.SetPodStatus(pod.UID, status.TerminatePod(pod, s))
	}
	if pod.DeletionTimestamp == nil {
		return nil
	}
	return k.finalize(ctx, pod)
}

// finalize tells a deleted pod's source that the pod is gone.
func (k *Kubelet) finalize(ctx context.Context, pod *v1.Pod) error {
	src := pod.Annotations[defaults.ConfigSourceAnnotationKey]
	if f, ok := k.opts.Finalizers[src]; ok {
		return f.Finalize(ctx, pod.Namespace, pod.Name, pod.UID)
	}
	return nil
}
