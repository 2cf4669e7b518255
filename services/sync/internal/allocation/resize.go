package allocation

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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
	m.pending[pod.UID] = v1.PodCondition{
		Type: v1.PodResizePending, Status: v1.ConditionTrue,
		Reason: reason, Message: message, ObservedGeneration: pod.Generation,
	}
	m.mu.Unlock()
	return false, nil
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

// PendingResizes lists the pods whose resize is Deferred, in a stable
// order, for the sync loop to retry (the kubelet's podsWithPendingResizes).
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
