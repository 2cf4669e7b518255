package prober

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// Update is one change of a probe result, sent on ResultsManager.Updates.
// It matches the kubelet's results.Update.
type Update struct {
	ContainerID container.ContainerID
	Result      kuberuntime.ProbeResult
	PodUID      types.UID
}

// updatesBuffer is the kubelet's buffer size for a results manager's
// updates channel (results.NewManager).
const updatesBuffer = 20

// ResultsManager caches the latest result of one kind of probe per
// container instance and announces changes. It matches the kubelet's
// prober/results.Manager.
//
// Contract: Updates must be drained by the caller. As in the kubelet, a
// change is sent with a blocking send on a channel buffered for 20 updates,
// so a probe worker whose update nobody reads waits (it never drops a
// result the sync loop has to act on).
type ResultsManager struct {
	mu      sync.RWMutex
	cache   map[container.ContainerID]kuberuntime.ProbeResult
	updates chan Update
}

// NewResultsManager returns an empty results manager.
func NewResultsManager() *ResultsManager {
	return &ResultsManager{
		cache:   make(map[container.ContainerID]kuberuntime.ProbeResult),
		updates: make(chan Update, updatesBuffer),
	}
}

// Get returns the cached result of a container instance. ok is false when
// there is none; a stored ProbeUnknown (a startup probe that has not run
// yet) is returned with ok true, as the kubelet's results.Unknown is.
func (m *ResultsManager) Get(id container.ContainerID) (kuberuntime.ProbeResult, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	r, ok := m.cache[id]
	return r, ok
}

// Set records a result and, if it differs from the cached one (or there
// was none), sends an Update.
func (m *ResultsManager) Set(id container.ContainerID, result kuberuntime.ProbeResult, podUID types.UID) {
	if m.setInternal(id, result) {
		m.updates <- Update{ContainerID: id, Result: result, PodUID: podUID}
	}
}

// set is Set for probe workers: the send gives up when ctx ends, so a
// manager being shut down does not leave workers blocked on a channel
// nobody reads any more.
func (m *ResultsManager) set(ctx context.Context, id container.ContainerID, result kuberuntime.ProbeResult, podUID types.UID) {
	if m.setInternal(id, result) {
		select {
		case m.updates <- Update{ContainerID: id, Result: result, PodUID: podUID}:
		case <-ctx.Done():
		}
	}
}

// setInternal is the locked part of Set; the send happens outside the lock
// so readers are never held up by a slow consumer.
func (m *ResultsManager) setInternal(id container.ContainerID, result kuberuntime.ProbeResult) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev, exists := m.cache[id]
	if exists && prev == result {
		return false
	}
	m.cache[id] = result
	return true
}

// Remove forgets a container instance's result.
func (m *ResultsManager) Remove(id container.ContainerID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.cache, id)
}

// Updates returns the channel of result changes; see the type's contract.
func (m *ResultsManager) Updates() <-chan Update {
	return m.updates
}
