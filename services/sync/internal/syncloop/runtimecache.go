package syncloop

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// runtimeCacheRefreshPeriod is how old a node-wide listing housekeeping
// may use: the kubelet's runtimeCacheRefreshPeriod (housekeepingPeriod +
// housekeepingWarningDuration).
const runtimeCacheRefreshPeriod = 3 * time.Second

// runtimeCache keeps the latest node-wide listing of the runtime's pods, so
// that housekeeping's orphan scan does not list the whole node on every
// pass. It matches the kubelet's runtimeCache (pkg/kubelet/container/
// runtime_cache.go): GetPods answers from a listing younger than the
// cache period and lists again otherwise. The PLEG's complete relists feed
// it too (set), so while the PLEG relists at its base period housekeeping
// never lists on its own.
type runtimeCache struct {
	getter func(ctx context.Context) (map[types.UID]*kuberuntime.RunningPod, error)
	period time.Duration

	mu sync.Mutex
	// pods is the latest listing, begun at cacheTime.
	pods      map[types.UID]*kuberuntime.RunningPod
	cacheTime time.Time
	// removed holds, per pod housekeeping removed from the runtime, when
	// it did: a listing begun before that still shows the pod, which must
	// not then pass for an orphan.
	removed map[types.UID]time.Time
}

func newRuntimeCache(getter func(ctx context.Context) (map[types.UID]*kuberuntime.RunningPod, error), period time.Duration) *runtimeCache {
	return &runtimeCache{getter: getter, period: period, removed: map[types.UID]time.Time{}}
}

// GetPods returns the runtime's pods from a listing begun less than the
// cache period ago, listing again when the cached one is older. Pods
// removed after the listing began are left out. The map is shared: callers
// must not modify it or its pods. Matches the kubelet's
// runtimeCache.GetPods.
func (c *runtimeCache) GetPods(ctx context.Context) (map[types.UID]*kuberuntime.RunningPod, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.cacheTime) > c.period {
		// As the kubelet's updateCache, the listing is stamped with the
		// time it began.
		listedAt := time.Now()
		pods, err := c.getter(ctx)
		if err != nil {
			return nil, err
		}
		c.setLocked(pods, listedAt)
	}
	if len(c.removed) == 0 {
		return c.pods, nil
	}
	out := make(map[types.UID]*kuberuntime.RunningPod, len(c.pods))
	for uid, p := range c.pods {
		if _, gone := c.removed[uid]; !gone {
			out[uid] = p
		}
	}
	return out, nil
}

// set stores a listing begun at listedAt unless the cache holds a newer
// one.
func (c *runtimeCache) set(pods map[types.UID]*kuberuntime.RunningPod, listedAt time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(pods, listedAt)
}

func (c *runtimeCache) setLocked(pods map[types.UID]*kuberuntime.RunningPod, listedAt time.Time) {
	if listedAt.Before(c.cacheTime) {
		return
	}
	c.pods, c.cacheTime = pods, listedAt
	// A listing begun after a removal shows the runtime as it is: the
	// removal's mark is no longer needed (and a pod listed again was
	// not removed after all).
	for uid, at := range c.removed {
		if at.Before(listedAt) {
			delete(c.removed, uid)
		}
	}
}

// Removed records that the pod's sandboxes and containers were removed
// from the runtime at at.
func (c *runtimeCache) Removed(uid types.UID, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removed[uid] = at
}
