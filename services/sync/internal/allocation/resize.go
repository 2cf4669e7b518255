package allocation

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/internal/qos"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
)

// HandlePodResourcesResize decides on a resize of pod, an admitted pod
// whose spec now asks for other container resources than its allocation.
// If fit says the node can take the resized pod, the spec's resources
// become the allocation and allocated is true; otherwise the pod gets a
// PodResizePending condition (reason Infeasible as fit gives it, any other
// reason Deferred, with fit's message) and, when Deferred, waits for
// RetryPendingResizes. A pod whose spec matches its allocation has its
// pending condition cleared. A fit error leaves the resize Deferred.
// Matches the kubelet's handlePodResourcesResize, with the status
// manager's SetPodResizePendingCondition.
func (m *Manager) HandlePodResourcesResize(pod *v1.Pod, fit FitFunc) (allocated bool, err error) {
	m.mu.Lock()
	alloc, known := m.st.Allocated[pod.UID]
	m.mu.Unlock()
	if !known {
		// Not admitted through AddPod: nothing to resize from.
		return false, nil
	}
	if _, updated := updatePodFromAllocation(pod, alloc); !updated {
		m.clearPending(pod.UID)
		return false, nil
	}
	ok, reason, message, ferr := fit(pod)
	if ferr != nil {
		reason, message = v1.PodReasonDeferred, ferr.Error()
	}
	if ok && ferr == nil {
		if err := m.SetAllocatedResources(pod); err != nil {
			return false, err
		}
		m.clearPending(pod.UID)
		return true, nil
	}
	if reason != v1.PodReasonInfeasible {
		reason = v1.PodReasonDeferred
	}
	m.mu.Lock()
	since := metav1.Now()
	if old, ok := m.pending[pod.UID]; ok && old.Reason == reason {
		since = old.LastTransitionTime
	}
	m.pending[pod.UID] = v1.PodCondition{
		Type: v1.PodResizePending, Status: v1.ConditionTrue, LastTransitionTime: since,
		Reason: reason, Message: message, ObservedGeneration: pod.Generation,
	}
	m.mu.Unlock()
	return false, nil
}

// SortPendingResizes orders pods whose resize is Deferred as the kubelet
// retries them: resizes that do not raise the pod's requests first (they
// always fit), then higher priority, then Guaranteed before the rest, then
// the longest deferred. Matches the kubelet's sortPendingResizes.
func (m *Manager) SortPendingResizes(pods []*v1.Pod) {
	increasing := make(map[types.UID]bool, len(pods))
	since := make(map[types.UID]metav1.Time, len(pods))
	for _, p := range pods {
		increasing[p.UID] = m.isResizeIncreasingRequests(p)
		c, _ := m.PodResizePending(p.UID)
		since[p.UID] = c.LastTransitionTime
	}
	priority := func(p *v1.Pod) int32 {
		if p.Spec.Priority == nil {
			return 0
		}
		return *p.Spec.Priority
	}
	guaranteed := func(p *v1.Pod) bool { return qos.GetPodQOS(p) == v1.PodQOSGuaranteed }
	slices.SortStableFunc(pods, func(a, b *v1.Pod) int {
		if increasing[a.UID] != increasing[b.UID] {
			return boolFirst(!increasing[a.UID])
		}
		if c := cmp.Compare(priority(b), priority(a)); c != 0 {
			return c
		}
		if guaranteed(a) != guaranteed(b) {
			return boolFirst(guaranteed(a))
		}
		return since[a.UID].Time.Compare(since[b.UID].Time)
	})
}

// boolFirst orders the element for which first holds before the other.
func boolFirst(first bool) int {
	if first {
		return -1
	}
	return 1
}

// isResizeIncreasingRequests says whether the pod's spec asks for more cpu
// or memory in total than its allocation. Matches the kubelet's
// isResizeIncreasingRequests.
func (m *Manager) isResizeIncreasingRequests(pod *v1.Pod) bool {
	allocated, updated := m.UpdatePodFromAllocation(pod)
	if !updated {
		return false
	}
	was := defaults.AggregateContainerRequests(&allocated.Spec)
	now := defaults.AggregateContainerRequests(&pod.Spec)
	return now.Memory().Cmp(*was.Memory()) > 0 || now.Cpu().Cmp(*was.Cpu()) > 0
}

func (m *Manager) clearPending(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pending, uid)
}

// PodResizePending returns the pod's PodResizePending condition while a
// resize waits. Matches the kubelet's status manager
// GetPodResizeConditions (its PodResizePending half).
func (m *Manager) PodResizePending(uid types.UID) (v1.PodCondition, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.pending[uid]
	return c, ok
}

// PendingResizes lists the pods whose resize is Deferred, for the sync
// loop to retry (the kubelet's podsWithPendingResizes; SortPendingResizes
// orders them).
// An Infeasible resize is not retried: only a new resize of the pod is.
func (m *Manager) PendingResizes() []types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	var uids []types.UID
	for uid, c := range m.pending {
		if c.Reason == v1.PodReasonDeferred {
			uids = append(uids, uid)
		}
	}
	slices.Sort(uids)
	return uids
}
