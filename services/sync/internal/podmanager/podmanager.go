// Package podmanager is splitlet-sync's desired state: the pods of every
// source, by UID and by namespace/name, each with the latest API status the
// pod worker generated. It matches the kubelet's pod manager combined with
// the status manager's cache, and it feeds PodService Get, List and Watch:
// subscribers receive every change of a pod or of its status.
package podmanager

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// EventType is the Kubernetes watch event type.
type EventType int

const (
	Added EventType = iota + 1
	Modified
	Deleted
)

// Event is one change of one pod; Pod carries its status. Seq numbers the
// manager's changes, 1 upwards, in the order they were published.
type Event struct {
	Type EventType
	Pod  *v1.Pod
	Seq  uint64
}

// Manager is safe for concurrent use.
type Manager struct {
	mu    sync.RWMutex
	byUID map[types.UID]*v1.Pod
	// sorted holds byUID's pods in podOrder, kept as pods come and go so
	// that GetPods, called per admission batch and per housekeeping and
	// sync-loop tick, copies it instead of sorting every pod each time.
	sorted   []*v1.Pod
	byName   map[string]types.UID
	statuses map[types.UID]v1.PodStatus
	subs     map[int]chan Event
	nextSub  int
	seq      uint64 // of the last change published
}

// New returns an empty manager.
func New() *Manager {
	return &Manager{
		byUID:    map[types.UID]*v1.Pod{},
		byName:   map[string]types.UID{},
		statuses: map[types.UID]v1.PodStatus{},
		subs:     map[int]chan Event{},
	}
}

func fullName(namespace, name string) string { return namespace + "/" + name }

// withStatus returns a copy of pod carrying its latest generated status, or
// the status it came with when none was generated yet.
func (m *Manager) withStatus(pod *v1.Pod) *v1.Pod {
	p := pod.DeepCopy()
	if s, ok := m.statuses[pod.UID]; ok {
		p.Status = *s.DeepCopy()
	}
	return p
}

// AddPod records a new pod, or replaces the spec of a known one.
func (m *Manager) AddPod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	typ := Modified
	if old, ok := m.byUID[pod.UID]; ok {
		m.unsortLocked(old)
	} else {
		typ = Added
	}
	m.byUID[pod.UID] = pod
	i, _ := slices.BinarySearchFunc(m.sorted, pod, podOrder)
	m.sorted = slices.Insert(m.sorted, i, pod)
	m.byName[fullName(pod.Namespace, pod.Name)] = pod.UID
	m.publishLocked(Event{Type: typ, Pod: m.withStatus(pod)})
}

// UpdatePod is AddPod; the two names keep the kubelet's call sites.
func (m *Manager) UpdatePod(pod *v1.Pod) { m.AddPod(pod) }

// RemovePod forgets a pod and its status.
func (m *Manager) RemovePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	known, ok := m.byUID[pod.UID]
	if !ok {
		return
	}
	ev := Event{Type: Deleted, Pod: m.withStatus(known)}
	delete(m.byUID, pod.UID)
	m.unsortLocked(known)
	if m.byName[fullName(pod.Namespace, pod.Name)] == pod.UID {
		delete(m.byName, fullName(pod.Namespace, pod.Name))
	}
	delete(m.statuses, pod.UID)
	m.publishLocked(ev)
}

// GetPodByUID returns the pod as its source gave it (no status), or nil.
func (m *Manager) GetPodByUID(uid types.UID) *v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.byUID[uid]
}

// GetPodByFullName returns the pod with its status, or nil.
func (m *Manager) GetPodByFullName(namespace, name string) *v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.byUID[m.byName[fullName(namespace, name)]]
	if !ok {
		return nil
	}
	return m.withStatus(p)
}

// GetPods returns every pod as its source gave it, ordered by namespace/name.
func (m *Manager) GetPods() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.sorted)
}

// GetPodsAndPhases returns GetPods and, at the same index, each pod's
// GetPodPhase ("" for a pod with no status yet), under one lock: admission
// asks for both of every pod for every batch.
func (m *Manager) GetPodsAndPhases() ([]*v1.Pod, []v1.PodPhase) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	phases := make([]v1.PodPhase, len(m.sorted))
	for i, p := range m.sorted {
		phases[i] = m.statuses[p.UID].Phase
	}
	return slices.Clone(m.sorted), phases
}

// unsortLocked takes pod, as recorded, out of m.sorted.
func (m *Manager) unsortLocked(pod *v1.Pod) {
	if i, found := slices.BinarySearchFunc(m.sorted, pod, podOrder); found {
		m.sorted = slices.Delete(m.sorted, i, i+1)
	}
}

// GetPodsWithStatus returns copies of every pod carrying its status, ordered
// by namespace/name.
func (m *Manager) GetPodsWithStatus() []*v1.Pod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	pods := make([]*v1.Pod, 0, len(m.sorted))
	for _, p := range m.sorted {
		pods = append(pods, m.withStatus(p))
	}
	return pods
}

// podOrder is namespace, then name (as kubectl lists them), then UID: a
// deleted pod and its replacement share a name until the first is gone. It
// compares the fields in place: building namespace/name strings here made
// sorting the admission's active set a tenth of sync's CPU in a 1000-pod
// burst.
func podOrder(a, b *v1.Pod) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(string(a.UID), string(b.UID)))
}

// GetPodStatus returns the latest generated status of a pod.
func (m *Manager) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.statuses[uid]
	return s, ok
}

// GetPodPhase returns the phase of the pod's recorded status, without
// copying the status (admission asks it of every pod for every batch).
func (m *Manager) GetPodPhase(uid types.UID) (v1.PodPhase, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	s, ok := m.statuses[uid]
	return s.Phase, ok
}

// SetPodStatus records a pod's generated status and tells subscribers when
// it differs from the previous one. A pod no longer known is ignored (its
// worker finished after the pod was removed).
func (m *Manager) SetPodStatus(uid types.UID, status v1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pod, ok := m.byUID[uid]
	if !ok {
		return
	}
	if old, ok := m.statuses[uid]; ok && equality.Semantic.DeepEqual(old, status) {
		return
	}
	m.statuses[uid] = *status.DeepCopy()
	m.publishLocked(Event{Type: Modified, Pod: m.withStatus(pod)})
}

// Subscribe returns a channel of every later change and a cancel func. A
// subscriber that falls more than buffer events behind has its channel
// closed, so that a slow watcher never holds up pod workers; it must
// re-subscribe (and re-list).
func (m *Manager) Subscribe(buffer int) (<-chan Event, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.nextSub
	m.nextSub++
	ch := make(chan Event, buffer)
	m.subs[id] = ch
	return ch, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if c, ok := m.subs[id]; ok {
			delete(m.subs, id)
			close(c)
		}
	}
}

// Seq is the number of the last change published (0: none yet). A
// subscriber that has handled the event with this Seq has seen every change.
func (m *Manager) Seq() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.seq
}

func (m *Manager) publishLocked(ev Event) {
	m.seq++
	ev.Seq = m.seq
	for id, ch := range m.subs {
		select {
		case ch <- ev:
		default:
			delete(m.subs, id)
			close(ch)
		}
	}
}
