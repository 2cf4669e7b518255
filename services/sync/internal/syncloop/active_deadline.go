package syncloop

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/status"
)

// The reason and message of a pod failed for its activeDeadlineSeconds, the
// kubelet's (pkg/kubelet/active_deadline.go).
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// activeDeadlineHandler fails a pod that has been active longer than its
// spec.activeDeadlineSeconds, counted from its status's startTime. The
// deadline is read from the pod as it is now, so an update that lowers it
// takes effect at once. Matches the kubelet's activeDeadlineHandler, both a
// PodSyncLoopHandler (ShouldSync: the pod is synced when its deadline
// passes) and a PodSyncHandler (ShouldEvict: its status becomes Failed).
type activeDeadlineHandler struct {
	// podStatus is the last status generated for a pod (the kubelet's
	// status manager); without one the pod's own status counts.
	podStatus func(types.UID) (v1.PodStatus, bool)
	recorder  events.EventRecorder
	now       func() time.Time
}

func newActiveDeadlineHandler(podStatus func(types.UID) (v1.PodStatus, bool), recorder events.EventRecorder, now func() time.Time) *activeDeadlineHandler {
	return &activeDeadlineHandler{podStatus: podStatus, recorder: recorder, now: now}
}

// ShouldSync reports whether the pod is past its active deadline.
func (m *activeDeadlineHandler) ShouldSync(pod *v1.Pod) bool {
	return m.pastActiveDeadline(pod)
}

// ShouldEvict returns the status a pod past its active deadline must take,
// and records a Normal DeadlineExceeded event (every time, as the kubelet;
// the recorder folds repeats into one event); nil for any other pod.
func (m *activeDeadlineHandler) ShouldEvict(pod *v1.Pod) *status.Eviction {
	if !m.pastActiveDeadline(pod) {
		return nil
	}
	m.recorder.Eventf(pod, v1.EventTypeNormal, reasonDeadlineExceeded, "%s", messageDeadlineExceeded)
	return &status.Eviction{Reason: reasonDeadlineExceeded, Message: messageDeadlineExceeded}
}

// pastActiveDeadline reports whether the pod has been active for at least
// its activeDeadlineSeconds. A pod without a start time has not started.
func (m *activeDeadlineHandler) pastActiveDeadline(pod *v1.Pod) bool {
	if pod.Spec.ActiveDeadlineSeconds == nil {
		return false
	}
	s, ok := m.podStatus(pod.UID)
	if !ok {
		s = pod.Status
	}
	if s.StartTime == nil || s.StartTime.IsZero() {
		return false
	}
	allowed := time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second
	return m.now().Sub(s.StartTime.Time) >= allowed
}

// getPodsToSync returns the pods past their active deadline, which must be
// synced now to be failed. Matches the kubelet's getPodsToSync minus its
// work queue: each pod worker schedules its own resyncs and retries.
func (k *Kubelet) getPodsToSync() []*v1.Pod {
	var pods []*v1.Pod
	for _, pod := range k.podManager.GetPods() {
		if k.activeDeadline.ShouldSync(pod) {
			pods = append(pods, pod)
		}
	}
	return pods
}
