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
	podStatus, _, err := k.statuses.read(ctx, pod)
	if err != nil {
		return nil, v1.PodStatus{}, err
	}
	return podStatus, k.publishStatus(ctx, pod, podStatus, terminal), nil
}

// publishStatus generates the pod's API status from podStatus and publishes
// it; it returns the status in effect.
func (k *Kubelet) publishStatus(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, terminal bool) v1.PodStatus {
	// The status reports the allocation, and the running containers
	// against it.
	pod = k.allocatedPod(pod)
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
	if c, ok := k.alloc.PodResizePending(pod.UID); ok {
		in.ResizePending = &c
	}
	in.ResizeError = k.resizeError(pod.UID)
	if container.PodWantsRecursiveReadOnly(pod) {
		in.SupportsRecursiveReadOnly = func(p *v1.Pod) bool { return k.runtime.SupportsRecursiveReadOnlyMounts(ctx, p) }
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
	if !terminal && in.OldStatus != nil && hasTrueCondition(in.OldStatus, v1.PodResizeInProgress) &&
		!hasTrueCondition(&apiStatus, v1.PodResizeInProgress) {
		// The kubelet's SyncPod on clearing PodResizeInProgress.
		k.opts.Recorder.Eventf(pod, v1.EventTypeNormal, events.ResizeCompleted, "Pod resize completed: generation %d", pod.Generation)
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
// The status a sync starts from, and whether it reads the runtime after,
// follow the status cache's rule (statuscache.go): a sync woken by a PLEG
// event or a resync makes no runtime call unless it acts.
func (k *Kubelet) SyncPod(ctx context.Context, updateType worker.UpdateType, pod *v1.Pod) (bool, error) {
	// The runtime runs the pod as allocated; a resize the node has not
	// granted stays in the spec only.
	pod = k.allocatedPod(pod)
	start, err := k.statuses.begin(ctx, pod)
	if err != nil {
		return false, err
	}
	apiStatus := k.publishStatus(ctx, pod, start.status, false)
	if apiStatus.Phase == v1.PodSucceeded || apiStatus.Phase == v1.PodFailed {
		_, _ = k.statuses.end(ctx, pod, start, kuberuntime.SyncResult{}, nil)
		logctx.From(ctx).Info("pod is terminal", zap.String("phase", string(apiStatus.Phase)))
		return true, nil
	}
	if err := k.networkNotReady(pod); err != nil {
		_, err = k.statuses.end(ctx, pod, start, kuberuntime.SyncResult{}, err)
		return false, err
	}
	var probes kuberuntime.ProbeResults
	if k.opts.Prober != nil {
		probes = k.opts.Prober
	}
	// The kubelet's syncPod asks for an in-place restart when the status
	// it just generated carries AllContainersRestarting=True.
	restartAll := hasTrueCondition(&apiStatus, v1.AllContainersRestarting)
	res, syncErr := k.runtime.SyncPod(ctx, pod, withAPIPodIPs(start.status, &apiStatus), probes, restartAll)
	k.setResizeError(pod, res.ResizeErr)
	if res.Reset && syncErr == nil && k.workers != nil {
		// The containers are gone; start them again at once rather than
		// at the next event or resync, as the kubelet's syncPod requeues
		// the pod. The next sync sees an empty runtime and an unmarked
		// status, so this does not loop.
		k.workers.Wake(pod.UID)
	}
	after, syncErr := k.statuses.end(ctx, pod, start, res, syncErr)
	// A sync that acted publishes what it did; one that only changed a
	// waiting reason publishes that, from the status it started from.
	if after != nil && (res.Acted || res.WaitingChanged || res.ResizeErr != nil) {
		k.publishStatus(ctx, pod, after, false)
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
