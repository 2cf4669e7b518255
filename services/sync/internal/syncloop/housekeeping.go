package syncloop

import (
	"context"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/worker"
)

// HandlePodCleanups is housekeeping, run once every source has reported:
//   - workers of pods no source has any more are forgotten once finished,
//     with their cached runtime status, and their sandboxes and containers
//     removed from the runtime;
//   - pods the runtime has (by the io.kubernetes.pod.uid label) that sync
//     created (kuberuntime.ManagedByAnnotation on a sandbox), that no source
//     knows and no worker handles are orphans: a worker is started to kill
//     them, with each container's recorded grace period; a kubelet's pods on
//     the same runtime are never touched;
//   - back-off tables are garbage-collected.
//
// Dead containers are removed on their own period (runContainerGC).
//
// Matches the kubelet's HandlePodCleanups (SyncKnownPods, orphan kills).
// The orphan scan reads the runtime cache (runtimeCache.GetPods), so a
// listing up to runtimeCacheRefreshPeriod old, often the PLEG's last
// relist, serves instead of a node-wide listing on every pass. The kubelet
// forces the cache fresh first (ForceUpdateIfOlder(now)) so that a static
// pod reusing a terminated pod's UID is not held back by a stale listing;
// here a pod worker never waits on the listing (a re-added UID waits only
// for its old worker to be forgotten, above), so a stale listing can only
// delay an orphan's kill by a few seconds, and it cannot revive a pod
// removed above (runtimeCache.Removed).
func (k *Kubelet) HandlePodCleanups(ctx context.Context) {
	log := logctx.From(ctx)
	desired := map[types.UID]bool{}
	probed := map[types.UID]struct{}{}
	for _, p := range k.podManager.GetPods() {
		desired[p.UID] = true
		if !k.workers.IsPodTerminationRequested(p.UID) {
			probed[p.UID] = struct{}{}
		}
	}
	if k.opts.Prober != nil {
		k.opts.Prober.CleanupPods(probed)
	}
	for _, uid := range k.workers.Known() {
		if desired[uid] || !k.workers.Forget(uid) {
			continue
		}
		// Dropped before anything else can run a worker for the UID
		// again (housekeeping and pod additions share the sync loop).
		k.statuses.forget(uid)
		if err := k.runtime.RemovePod(ctx, uid); err != nil {
			log.Warn("cannot remove the runtime leftovers of a removed pod", zap.String("podUID", string(uid)), zap.Error(err))
		} else {
			k.runtimePods.Removed(uid, time.Now())
			k.cgroupsLeft[uid] = 0
		}
		k.runtime.ForgetPod(uid)
		// Its resources are free: deferred resizes may fit now.
		k.resizeRetryDue = true
		log.Info("pod removed", zap.String("podUID", string(uid)))
	}

	k.statuses.retain(func(uid types.UID) bool { return desired[uid] || k.workers.IsKnown(uid) })
	// Allocations of pods gone; then the resizes waiting for room, which
	// a removed pod may have made (the kubelet's RemoveOrphanedPods and
	// RetryPendingResizes).
	if err := k.alloc.RemoveOrphanedPods(func(uid types.UID) bool { return desired[uid] || k.workers.IsKnown(uid) }); err != nil {
		log.Warn("cannot forget the allocations of removed pods", zap.Error(err))
	}
	k.retryPendingResizes(ctx)

	k.removePodCgroups(ctx)
	// Back-off tables do not depend on the listing.
	k.runtime.GC()
	running, err := k.runtimePods.GetPods(ctx)
	if err != nil {
		log.Warn("housekeeping: cannot list runtime pods", zap.Error(err))
		return
	}
	for uid, rp := range running {
		if desired[uid] || k.workers.IsKnown(uid) {
			continue
		}
		if !rp.Managed {
			// Not created by sync (a kubelet's, or sandbox gone): leave it.
			continue
		}
		log.Info("killing orphaned pod", zap.String("pod", rp.Namespace+"/"+rp.Name), zap.String("podUID", string(uid)))
		// A pod known only from labels: no spec, so the kill uses each
		// container's recorded grace period.
		orphan := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Name: rp.Name, Namespace: rp.Namespace}}
		k.workers.UpdatePod(worker.UpdatePodOptions{UpdateType: worker.SyncPodKill, Pod: orphan})
	}
}

// runContainerGC removes dead containers (kuberuntime's GarbageCollect) at
// once and then every ContainerGCPeriod until ctx ends. Matches the
// kubelet's StartGarbageCollection, which runs the container GC every
// ContainerGCPeriod (1 min) on its own goroutine rather than in
// housekeeping: the GC lists the whole node, and dead containers beyond
// the newest of each container can wait a minute.
func (k *Kubelet) runContainerGC(ctx context.Context) {
	t := time.NewTicker(k.opts.ContainerGCPeriod)
	defer t.Stop()
	for {
		if err := k.runtime.GarbageCollect(ctx); err != nil && ctx.Err() == nil {
			logctx.From(ctx).Warn("container garbage collection failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DeleteAllUnusedContainers removes every dead container and sandbox no
// pod needs: what the periodic container GC removes, and everything but
// running containers and ready sandboxes of the pods whose worker has
// terminated them for good while a source still holds them (a pod that
// failed or succeeded and was not deleted). The eviction manager asks for it
// before evicting pods for disk pressure. Matches the kubelet's
// realContainerGC.DeleteAllUnusedContainers, whose podStateProvider says
// ShouldPodRuntimeBeRemoved from the pod workers.
func (k *Kubelet) DeleteAllUnusedContainers(ctx context.Context) error {
	return k.runtime.DeleteAllUnusedContainers(ctx, k.workers.IsPodKnownTerminated)
}

// PodCgroupRemover removes a pod's cgroups (cm.PodCgroups.Remove).
type PodCgroupRemover interface {
	Remove(uid types.UID) error
}

// maxCgroupTries bounds how many housekeeping passes try to remove a
// removed pod's cgroups (about a minute at the 2 s period).
const maxCgroupTries = 30

// removePodCgroups removes the cgroups of the pods housekeeping removed from
// the runtime. Matches the kubelet's cleanupOrphanedPodCgroups, which
// destroys the pod cgroup of every pod no longer known, with one
// restriction: only pods sync itself ran and removed are touched, since a
// kubelet on the same node keeps its pods' cgroups under the same
// /kubepods tree. A cgroup that is not empty yet (a process still exiting)
// is tried again on the next passes, as the kubelet retries on its next
// housekeeping.
func (k *Kubelet) removePodCgroups(ctx context.Context) {
	if k.opts.PodCgroups == nil {
		clear(k.cgroupsLeft)
		return
	}
	for uid, tries := range k.cgroupsLeft {
		err := k.opts.PodCgroups.Remove(uid)
		if err == nil {
			delete(k.cgroupsLeft, uid)
			continue
		}
		if tries+1 >= maxCgroupTries {
			logctx.From(ctx).Warn("cannot remove a removed pod's cgroups, giving up", zap.String("podUID", string(uid)), zap.Error(err))
			delete(k.cgroupsLeft, uid)
			continue
		}
		k.cgroupsLeft[uid] = tries + 1
	}
}
