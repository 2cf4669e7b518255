package container

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Cache holds the latest runtime status of each pod, so that a pod sync woken
// by a lifecycle event or a resync does not read the runtime again. It plays
// the part of the kubelet's pod cache (pkg/kubelet/container/cache.go), fed
// the same way: the PLEG stores what a relist fetched (GenericPLEG's
// updateCache) and what a container event carried (EventedPLEG), and a sync
// stores what it read itself.
//
// Each entry carries the time its status was read: a status read at t
// reflects every runtime change completed before t. Readers ask for a status
// read at or after a given time (GetNewerThan) and read the runtime
// themselves when there is none. Unlike the kubelet's, GetNewerThan never
// blocks waiting for a relist: a caller that must not wait fetches instead.
//
// Statuses in the cache are shared: callers must not modify them.
type Cache struct {
	mu   sync.Mutex
	pods map[types.UID]*cacheEntry
}

type cacheEntry struct {
	// status is nil when the entry only carries a floor (Invalidate).
	status *PodStatus
	// modified is when status was read: the start of the read for a
	// runtime read, the runtime's stamp for an event.
	modified time.Time
	// fromEvent marks a status built from a container event; received is
	// when the event arrived, by our clock.
	fromEvent bool
	received  time.Time
	// floor: no status read before it may be stored (Invalidate).
	floor time.Time
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{pods: map[types.UID]*cacheEntry{}}
}

// Get returns the pod's cached status and when it was read.
func (c *Cache) Get(uid types.UID) (*PodStatus, time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pods[uid]
	if !ok || e.status == nil {
		return nil, time.Time{}, false
	}
	return e.status, e.modified, true
}

// GetNewerThan returns the pod's cached status if it was read at or after
// minTime, with when it was read. It never blocks: ok is false when the
// cache has no such status and the caller should read the runtime. It
// matches the kubelet's Cache.GetNewerThan without the wait, and accepts a
// status read exactly at minTime, since a sync records as its end the read
// time of the status it finished with.
func (c *Cache) GetNewerThan(uid types.UID, minTime time.Time) (*PodStatus, time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pods[uid]
	if !ok || e.status == nil || e.modified.Before(minTime) {
		return nil, time.Time{}, false
	}
	return e.status, e.modified, true
}

// Has reports whether the cache holds an entry for the pod: a status, or
// only the floor an invalidation left (Invalidate), which says the pod's
// runtime state changed and must be read.
func (c *Cache) Has(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pods[uid]
	return ok
}

// Set stores a status read from the runtime (GetPodStatus) by a read that
// started at readAt. It returns whether the status was stored. A status
// read earlier than the cached one is dropped, so that a slow read finishing
// last does not win, except that a read started after the cached status's
// event arrived replaces it: it saw at least what the event did, by our own
// clock. A status read before the entry's floor (Invalidate) is dropped.
func (c *Cache) Set(uid types.UID, status *PodStatus, readAt time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pods[uid]
	if !ok {
		c.pods[uid] = &cacheEntry{status: status, modified: readAt}
		return true
	}
	if readAt.Before(e.floor) {
		return false
	}
	if e.status != nil && readAt.Before(e.modified) && !(e.fromEvent && !readAt.Before(e.received)) {
		return false
	}
	*e = cacheEntry{status: status, modified: readAt, floor: e.floor}
	return true
}

// SetFromEvent stores a status built from a container event the runtime
// stamped at createdAt and that arrived at receivedAt. It returns whether
// the status was stored. An event updates a complete status only: it is
// dropped when the cache holds none for the pod (an event shows one sandbox
// only, so it cannot tell whether older ones exist) or holds a newer one.
// An event that is newer but shows less than the cached status (a sandbox
// or container missing, or in an earlier state) cannot be merged: the
// entry is invalidated from receivedAt on, so the next sync reads the
// runtime. The kubelet's EventedPLEG sets its cache from events the same
// way (Cache.Set keeps the newer of two timestamps), without the check.
func (c *Cache) SetFromEvent(uid types.UID, status *PodStatus, createdAt, receivedAt time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.pods[uid]
	if !ok || e.status == nil || !createdAt.After(e.modified) || createdAt.Before(e.floor) {
		return false
	}
	if statusBehind(status, e.status) {
		c.invalidateLocked(uid, receivedAt)
		return false
	}
	*e = cacheEntry{status: status, modified: createdAt, fromEvent: true, received: receivedAt, floor: e.floor}
	return true
}

// Invalidate drops the pod's cached status if it was read before since,
// and refuses any status read before since from now on: the runtime is
// known to have changed at since, and a status that may not show the
// change must not be used.
func (c *Cache) Invalidate(uid types.UID, since time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.invalidateLocked(uid, since)
}

func (c *Cache) invalidateLocked(uid types.UID, since time.Time) {
	e, ok := c.pods[uid]
	if !ok {
		c.pods[uid] = &cacheEntry{floor: since}
		return
	}
	if since.After(e.floor) {
		e.floor = since
	}
	if e.status != nil && e.modified.Before(since) {
		e.status, e.modified, e.fromEvent, e.received = nil, time.Time{}, false, time.Time{}
	}
}

// Delete forgets the pod: call it once the pod is gone for good. Matches the
// kubelet's Cache.Delete.
func (c *Cache) Delete(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
}

// Retain drops the entries of every pod keep rejects. Housekeeping calls
// it with the pods sync still handles, so that the entry of a pod a relist
// read just as the pod went away does not stay behind.
func (c *Cache) Retain(keep func(types.UID) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid := range c.pods {
		if !keep(uid) {
			delete(c.pods, uid)
		}
	}
}

// ReadBefore returns the pods whose cached status was read before t, with
// those statuses. A relist whose listing began at t compares them with what
// it listed: the runtime is the truth.
func (c *Cache) ReadBefore(t time.Time) map[types.UID]*PodStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[types.UID]*PodStatus)
	for uid, e := range c.pods {
		if e.status != nil && e.modified.Before(t) {
			out[uid] = e.status
		}
	}
	return out
}

// Len returns the number of pods the cache holds entries for.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pods)
}

// statusBehind reports whether candidate shows less than cached: a sandbox
// or container instance of cached is missing from it, or is in an earlier
// state. Sandboxes go READY -> NOTREADY and containers CREATED -> RUNNING ->
// EXITED and never back, so such a candidate was taken before cached, or
// after a removal; either way it cannot replace cached without a read.
func statusBehind(candidate, cached *PodStatus) bool {
	sandboxes := make(map[string]runtimeapi.PodSandboxState, len(candidate.SandboxStatuses))
	for _, s := range candidate.SandboxStatuses {
		sandboxes[s.GetId()] = s.GetState()
	}
	for _, s := range cached.SandboxStatuses {
		st, ok := sandboxes[s.GetId()]
		if !ok || sandboxStateRank(st) < sandboxStateRank(s.GetState()) {
			return true
		}
	}
	containers := make(map[ContainerID]State, len(candidate.ContainerStatuses))
	for _, cs := range candidate.ContainerStatuses {
		containers[cs.ID] = cs.State
	}
	for _, cs := range cached.ContainerStatuses {
		st, ok := containers[cs.ID]
		if !ok {
			return true
		}
		if st == cs.State {
			continue
		}
		// Unknown has no place in the order: any change to or from it
		// needs a read.
		if st == ContainerStateUnknown || cs.State == ContainerStateUnknown || containerStateRank(st) < containerStateRank(cs.State) {
			return true
		}
	}
	return false
}

func sandboxStateRank(s runtimeapi.PodSandboxState) int {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return 0
	}
	return 1
}

func containerStateRank(s State) int {
	switch s {
	case ContainerStateCreated:
		return 0
	case ContainerStateRunning:
		return 1
	default:
		return 2
	}
}
