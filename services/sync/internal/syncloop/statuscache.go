package syncloop

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// statusCache is where a pod's sync gets the runtime status it acts on, and
// the one place that says when a cached status may stand in for a read of
// the runtime. It follows the kubelet: the PLEG keeps a pod cache up to
// date (pkg/kubelet/pleg), and the pod worker starts each sync from
// podCache.GetNewerThan(uid, lastSyncTime) (podWorkerLoop), so a sync never
// acts on a status older than what the previous sync did.
//
// The rule, in full:
//
//   - Writers. The PLEG stores the status of every pod a relist saw change
//     (read, or invalidated while the pod's SyncPod runs, since that sync
//     reads after acting anyway) and the status each container event
//     carries (package pleg). A sync stores every status it reads.
//   - Freshness. A sync of a pod synced before starts from the cached
//     status when it was read at or after the previous sync's end
//     (lastSync), and reads the runtime otherwise; unlike the kubelet it
//     never waits for the PLEG.
//   - The end of a sync is the read time of the status it finished with:
//     the status it started from when it did not act, or the read after
//     its actions when it did (kuberuntime.SyncResult.Acted); a failed read
//     after acting ends it at the time of the failure, so the next sync
//     reads.
//   - First sync. A pod's first sync starts from an empty status without a
//     read only when nothing can exist: the pod has no cache entry (not
//     even an invalidation) and the PLEG's last complete relist, and every
//     event since, showed nothing of it (pleg.RuntimeMayHold). This is the
//     kubelet's GetNewerThan answering a pod missing from its cache with an
//     empty status once a relist is newer than the zero lastSyncTime. Only
//     the pod's own worker creates anything for it, so it holds; before
//     the first relist completes (sync just restarted) every first sync
//     reads.
//   - After a first sync that started empty and created the pod without
//     error, the pod's objects are exactly those it created: their
//     statuses are read by ID without the two list calls of a full read,
//     and the sandbox's not at all when SyncPod read it for the pod's IPs
//     (Runtime.GetPodStatusOf, SyncResult.Created); the status then counts
//     as read when the sandbox's was.
//   - A pod sync forgets (housekeeping removed it) loses its entry and its
//     lastSync, and the PLEG is told (Touch) so that a pod re-added with
//     the same UID reads what the runtime may still hold until a relist
//     shows otherwise.
type statusCache struct {
	rt    Runtime
	cache *container.Cache
	// listing is what the PLEG knows of the runtime's pods; set once the
	// PLEG exists (New).
	listing listingKnowledge

	mu sync.Mutex
	// lastSync is, per pod, the read time of the status its previous sync
	// ended with.
	lastSync map[types.UID]time.Time
	// syncing holds the pods whose SyncPod is running.
	syncing map[types.UID]bool
}

// listingKnowledge is what the status cache asks of the PLEG (*pleg.PLEG).
type listingKnowledge interface {
	RuntimeMayHold(uid types.UID) bool
	Touch(uid types.UID, at time.Time)
}

func newStatusCache(rt Runtime) *statusCache {
	return &statusCache{rt: rt, cache: container.NewCache(), lastSync: map[types.UID]time.Time{}, syncing: map[types.UID]bool{}}
}

// syncStart is the status a sync starts from.
type syncStart struct {
	status *container.PodStatus
	// readAt is when status was read.
	readAt time.Time
	// empty says the runtime holds nothing of the pod but what this sync
	// creates (the first-sync case of the rule).
	empty bool
}

// begin marks the pod's SyncPod as running and returns the status it starts
// from; unless it fails, end must follow.
func (c *statusCache) begin(ctx context.Context, pod *v1.Pod) (syncStart, error) {
	c.mu.Lock()
	c.syncing[pod.UID] = true
	since, synced := c.lastSync[pod.UID]
	c.mu.Unlock()
	if synced {
		if ps, readAt, ok := c.cache.GetNewerThan(pod.UID, since); ok {
			return syncStart{status: ps, readAt: readAt}, nil
		}
	} else if !c.cache.Has(pod.UID) && !c.listing.RuntimeMayHold(pod.UID) {
		empty := &container.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
		return syncStart{status: empty, readAt: time.Now(), empty: true}, nil
	}
	ps, readAt, err := c.read(ctx, pod)
	if err != nil {
		c.notSyncing(pod.UID)
		return syncStart{}, err
	}
	return syncStart{status: ps, readAt: readAt}, nil
}

func (c *statusCache) notSyncing(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.syncing, uid)
}

// end records how the pod's SyncPod ended and marks it no longer running.
// A sync that did not act ends with the status it started from; one that
// acted reads the runtime again (by ID after creating a new pod) and
// returns that status, which the caller publishes. A failed read is
// returned as the error when the sync itself succeeded.
func (c *statusCache) end(ctx context.Context, pod *v1.Pod, start syncStart, res kuberuntime.SyncResult, syncErr error) (*container.PodStatus, error) {
	defer c.notSyncing(pod.UID)
	if !res.Acted {
		c.setLastSync(pod.UID, start.readAt)
		return start.status, syncErr
	}
	var after *container.PodStatus
	var afterAt time.Time
	var err error
	if start.empty && syncErr == nil && res.Created.HasSandbox() {
		afterAt = time.Now()
		if len(res.Created.Sandboxes) > 0 {
			// The status is as old as its oldest part.
			afterAt = res.Created.SandboxesReadAt
		}
		after, err = c.rt.GetPodStatusOf(ctx, pod.UID, pod.Name, pod.Namespace, res.Created)
		if err == nil {
			c.cache.Set(pod.UID, after, afterAt)
		} else {
			err = fmt.Errorf("runtime status: %w", err)
		}
	} else {
		after, afterAt, err = c.read(ctx, pod)
	}
	if err != nil {
		c.setLastSync(pod.UID, time.Now())
		if syncErr == nil {
			syncErr = err
		}
		return nil, syncErr
	}
	c.setLastSync(pod.UID, afterAt)
	return after, syncErr
}

// read reads the pod's status from the runtime, stores it in the cache and
// returns it with the time the read started.
func (c *statusCache) read(ctx context.Context, pod *v1.Pod) (*container.PodStatus, time.Time, error) {
	readAt := time.Now()
	ps, err := c.rt.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("runtime status: %w", err)
	}
	c.cache.Set(pod.UID, ps, readAt)
	return ps, readAt, nil
}

func (c *statusCache) setLastSync(uid types.UID, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastSync[uid] = t
}

// isSyncing reports whether the pod's SyncPod is running.
func (c *statusCache) isSyncing(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.syncing[uid]
}

// forget drops what is kept of a removed pod's runtime status.
func (c *statusCache) forget(uid types.UID) {
	c.mu.Lock()
	delete(c.lastSync, uid)
	c.mu.Unlock()
	c.cache.Delete(uid)
	c.listing.Touch(uid, time.Now())
}

// retain drops the cache entries of every pod keep rejects (Cache.Retain).
func (c *statusCache) retain(keep func(types.UID) bool) { c.cache.Retain(keep) }
