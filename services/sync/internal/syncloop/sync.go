package syncloop

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/logctx"
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

// generateStatus reads the runtime's view of the pod, generates its API
// status and publishes it.
func (k *Kubelet) generateStatus(ctx context.Context, pod *v1.Pod, terminal bool) (*container.PodStatus, v1.PodStatus, error) {
	podStatus, err := k.runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return nil, v1.PodStatus{}, fmt.Errorf("runtime status: %w", err)
	}
	// The status of a node-initiated kill applies once the pod is being
	// terminated (terminal: its containers were just killed).
	var ts *terminalStatus
	if terminal {
		ts = k.terminalStatusFor(pod)
	}
	in := status.Inputs{Reasons: reasons{k.runtime}, HostIPs: k.opts.HostIPs, PodIsTerminal: terminal, Eviction: ts.eviction()}
	if k.opts.Prober != nil {
		in.Readiness, in.Startup = k.opts.Prober.ReadinessResult, k.opts.Prober.StartupResult
	}
	if old, ok := k.podManager.GetPodStatus(pod.UID); ok {
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
	if err := status.CheckContainerStateTransition(in.OldStatus, &apiStatus, pod.Spec.RestartPolicy); err != nil {
		logctx.From(ctx).Error("dropping a pod status that goes backwards", zap.Error(err))
		return podStatus, *in.OldStatus, nil
	}
	if status.NeedsUpdate(in.OldStatus, &apiStatus) {
		k.podManager.SetPodStatus(pod.UID, apiStatus)
	}
	if apiStatus.Phase == v1.PodRunning {
		k.observeStarted(pod.UID)
	}
	return podStatus, apiStatus, nil
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
// Otherwise the runtime syncs it, and the status is refreshed so watchers
// see the outcome without waiting for the next sync. Matches the kubelet's
// SyncPod.
func (k *Kubelet) SyncPod(ctx context.Context, updateType worker.UpdateType, pod *v1.Pod) (bool, error) {
	podStatus, apiStatus, err := k.generateStatus(ctx, pod, false)
	if err != nil {
		return false, err
	}
	if apiStatus.Phase == v1.PodSucceeded || apiStatus.Phase == v1.PodFailed {
		logctx.From(ctx).Info("pod is terminal", zap.String("phase", string(apiStatus.Phase)))
		return true, nil
	}
	var probes kuberuntime.ProbeResults
	if k.opts.Prober != nil {
		probes = k.opts.Prober
	}
	syncErr := k.runtime.SyncPod(ctx, pod, podStatus, probes)
	if _, _, err := k.generateStatus(ctx, pod, false); err != nil && syncErr == nil {
		syncErr = err
	}
	return false, syncErr
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
