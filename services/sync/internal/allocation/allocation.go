// Package allocation keeps what the node has granted each pod's containers
// (their allocated resources) and what it last applied to each running
// container instance (its actuated resources), for in-place pod vertical
// scaling. It is the kubelet's allocation manager (pkg/kubelet/allocation)
// and its actuated state in one small store, written to one JSON file so
// that a sync restart keeps both.
//
// A resize of a pod's spec is not applied as it arrives: the sync loop
// asks HandlePodResourcesResize whether the node can take it. If it can,
// the new resources become the allocation and the pod's workers sync from
// the allocated pod (UpdatePodFromAllocation); if not, the pod carries a
// PodResizePending condition (Deferred, retried by RetryPendingResizes) and
// keeps its old allocation.
//
// Usage sketch:
//
//	m, err := allocation.New(filepath.Join(stateDir, "allocated_pods_state.json"))
//	m.AddPod(pod)                                   // on admission
//	ok, err := m.HandlePodResourcesResize(pod, fit) // on a pod update
//	allocated, _ := m.UpdatePodFromAllocation(pod)  // before each sync
package allocation

import (
	"fmt"
	"sync"

	"github.com/splitlet/splitlet/services/sync/internal/jsonfile"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// FitFunc says whether the node can take pod, whose containers' resources
// are the resized ones, beside the other active pods. ok false comes with
// the admit handlers' reason and message. An error means no decision could
// be made (the resize stays pending and is retried).
type FitFunc func(pod *v1.Pod) (ok bool, reason, message string, err error)

// state is the file's content.
type state struct {
	// Allocated is, per pod UID, each resizable container's allocated
	// requests and limits (the kubelet's allocated_pods_state checkpoint).
	Allocated map[types.UID]map[string]v1.ResourceRequirements `json:"allocated,omitempty"`
	// Actuated is, per pod UID, what the last successful
	// UpdateContainerResources set on each container instance (by CRI
	// container ID). An instance not listed runs with what it was created
	// with, which its own record (a label) says.
	Actuated map[types.UID]map[string]v1.ResourceRequirements `json:"actuated,omitempty"`
}

// Manager is the allocation store. It is safe for concurrent use.
type Manager struct {
	path string

	mu sync.Mutex
	st state
	// pending holds each pod's PodResizePending condition, while a resize
	// waits; the pod is retried by RetryPendingResizes while its reason is
	// Deferred.
	pending map[types.UID]v1.PodCondition
}

// New reads the store at path, or starts empty when there is no such file.
// An empty path keeps everything in memory. A corrupt file is an error
// beside a usable, empty Manager: pods are then allocated what they ask for
// again, as a kubelet without its checkpoint does.
func New(path string) (*Manager, error) {
	m := &Manager{path: path, pending: map[types.UID]v1.PodCondition{}}
	m.st = state{Allocated: map[types.UID]map[string]v1.ResourceRequirements{}, Actuated: map[types.UID]map[string]v1.ResourceRequirements{}}
	if path == "" {
		return m, nil
	}
	var st state
	if err := jsonfile.Load(path, &st); err != nil {
		return m, fmt.Errorf("pod allocations %s: %w", path, err)
	}
	if st.Allocated != nil {
		m.st.Allocated = st.Allocated
	}
	if st.Actuated != nil {
		m.st.Actuated = st.Actuated
	}
	return m, nil
}

// UpdatePodFromAllocation returns pod with each container's resources
// replaced by its allocation, copying the pod only when one differs; the
// bool says whether any did. A pod without an allocation is returned as is.
// Matches the kubelet's UpdatePodFromAllocation.
func (m *Manager) UpdatePodFromAllocation(pod *v1.Pod) (*v1.Pod, bool) {
	if pod == nil {
		return nil, false
	}
	m.mu.Lock()
	alloc, ok := m.st.Allocated[pod.UID]
	m.mu.Unlock()
	if !ok {
		return pod, false
	}
	return updatePodFromAllocation(pod, alloc)
}

// UpdatePodsFromAllocation replaces each pod of pods in place with
// UpdatePodFromAllocation's answer for it, looking the allocations up under
// one lock (admission asks it of every active pod for every batch).
func (m *Manager) UpdatePodsFromAllocation(pods []*v1.Pod) {
	allocs := make([]map[string]v1.ResourceRequirements, len(pods))
	m.mu.Lock()
	for i, pod := range pods {
		allocs[i] = m.st.Allocated[pod.UID]
	}
	m.mu.Unlock()
	for i, pod := range pods {
		if allocs[i] != nil {
			pods[i], _ = updatePodFromAllocation(pod, allocs[i])
		}
	}
}

func updatePodFromAllocation(pod *v1.Pod, alloc map[string]v1.ResourceRequirements) (*v1.Pod, bool) {
	updated := false
	apply := func(list func(*v1.Pod) []v1.Container) {
		cs := list(pod)
		for i := range cs {
			// Quantities compared as numbers, without reflection, and
			// the container not copied: every admission asks this of
			// every active pod.
			c := &cs[i]
			a, ok := alloc[c.Name]
			if !ok || container.SameResources(&c.Resources, &a) {
				continue
			}
			if !updated {
				pod = pod.DeepCopy()
				updated = true
			}
			list(pod)[i].Resources = *a.DeepCopy()
		}
	}
	apply(func(p *v1.Pod) []v1.Container { return p.Spec.Containers })
	apply(func(p *v1.Pod) []v1.Container { return p.Spec.InitContainers })
	return pod, updated
}

// allocationFromPod is the allocation pod's spec asks for: every regular
// and init container (InPlacePodVerticalScalingInitContainers is on in
// v1.36), never ephemeral ones. Matches the kubelet's allocationFromPod
// (without pod-level resources).
func allocationFromPod(pod *v1.Pod) map[string]v1.ResourceRequirements {
	alloc := make(map[string]v1.ResourceRequirements, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			alloc[list[i].Name] = *list[i].Resources.DeepCopy()
		}
	}
	return alloc
}

// SetAllocatedResources records pod's containers' resources as their
// allocation. Matches the kubelet's SetAllocatedResources.
func (m *Manager) SetAllocatedResources(pod *v1.Pod) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st.Allocated[pod.UID] = allocationFromPod(pod)
	return m.saveLocked()
}

// AddPod records the allocation of an admitted pod unless it has one
// already (a sync restart: the recorded allocation stands, and a resize
// made meanwhile is handled as one). It returns the allocated pod.
// Matches the allocation half of the kubelet's allocation manager AddPod,
// except that an allocation equal to the admitted spec is not written out
// at once (the next write of the file carries it): the kubelet's fsync
// per admitted pod would sit on every pod start, and all a crash loses is
// the allocation of a pod resized while sync was down and never resized
// before, whose resize is then taken as granted.
func (m *Manager) AddPod(pod *v1.Pod) (*v1.Pod, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if alloc, ok := m.st.Allocated[pod.UID]; ok {
		allocated, _ := updatePodFromAllocation(pod, alloc)
		return allocated, nil
	}
	m.st.Allocated[pod.UID] = allocationFromPod(pod)
	return pod, nil
}

// RemovePod forgets everything about the pod. Matches the kubelet's
// RemovePod (of both its allocated and actuated state).
func (m *Manager) RemovePod(uid types.UID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, a := m.st.Allocated[uid]
	_, b := m.st.Actuated[uid]
	delete(m.pending, uid)
	if !a && !b {
		return nil
	}
	delete(m.st.Allocated, uid)
	delete(m.st.Actuated, uid)
	return m.saveLocked()
}

// RemoveOrphanedPods forgets every pod for which keep is false. Matches
// the kubelet's RemoveOrphanedPods.
func (m *Manager) RemoveOrphanedPods(keep func(types.UID) bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := false
	for _, by := range []map[types.UID]map[string]v1.ResourceRequirements{m.st.Allocated, m.st.Actuated} {
		for uid := range by {
			if !keep(uid) {
				delete(by, uid)
				delete(m.pending, uid)
				changed = true
			}
		}
	}
	if !changed {
		return nil
	}
	return m.saveLocked()
}

// ActuatedResources returns what the last UpdateContainerResources set on
// the pod's container instance id, if any.
func (m *Manager) ActuatedResources(uid types.UID, id string) (v1.ResourceRequirements, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.st.Actuated[uid][id]
	if !ok {
		return v1.ResourceRequirements{}, false
	}
	return *r.DeepCopy(), true
}

// SetActuatedResources records that the runtime accepted r for the pod's
// container instance id. Matches the kubelet's setActuatedContainerResources
// (keyed by instance, so a restarted container starts from its own record).
func (m *Manager) SetActuatedResources(uid types.UID, id string, r v1.ResourceRequirements) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	byID := m.st.Actuated[uid]
	if byID == nil {
		byID = map[string]v1.ResourceRequirements{}
		m.st.Actuated[uid] = byID
	}
	byID[id] = *r.DeepCopy()
	return m.saveLocked()
}

// saveLocked writes the file anew (jsonfile.Save: a crash leaves the old
// file or the new one).
func (m *Manager) saveLocked() error {
	if m.path == "" {
		return nil
	}
	if err := jsonfile.Save(m.path, m.st); err != nil {
		return fmt.Errorf("pod allocations: %w", err)
	}
	return nil
}
