package pleg

import (
	"context"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// record is a sandbox or container as a relist saw it. Container states are
// offset by containerStateOffset so they never equal a sandbox state.
type record struct {
	uid     types.UID
	state   int32
	sandbox bool
}

const containerStateOffset = 100

// recordListing records what a complete relist whose listing began at listedAt
// saw, and hands the listing on.
func (g *PLEG) recordListing(uids map[types.UID]struct{}, sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, listedAt time.Time) {
	g.mu.Lock()
	g.relisted, g.listedUIDs = true, uids
	for uid, at := range g.touched {
		if at.Before(listedAt) {
			delete(g.touched, uid)
		}
	}
	g.mu.Unlock()
	if g.opts.Listed != nil {
		g.opts.Listed(sandboxes, containers, listedAt)
	}
}

// Relist lists every sandbox and container and reports the pods whose
// members appeared, changed state or disappeared. Matches the kubelet's
// GenericPLEG.Relist, including kubelet_pleg_relist_duration_seconds and the
// running pod and container gauges it updates.
func (g *PLEG) Relist(ctx context.Context) {
	start := time.Now()
	defer func() { g.opts.Metrics.RelistDuration.Observe(time.Since(start).Seconds()) }()
	log := logctx.From(ctx)
	listedAt := time.Now()
	sandboxes, err := g.opts.CRI.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		log.Warn("relist: cannot list sandboxes", zap.Error(err))
		return
	}
	containers, err := g.opts.CRI.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		log.Warn("relist: cannot list containers", zap.Error(err))
		return
	}
	now := make(map[string]record, len(sandboxes.GetItems())+len(containers.GetContainers()))
	uids := make(map[types.UID]struct{}, len(sandboxes.GetItems()))
	for _, sb := range sandboxes.GetItems() {
		uid := types.UID(sb.GetLabels()[kuberuntime.KubernetesPodUIDLabel])
		if uid == "" {
			continue
		}
		now[sb.GetId()] = record{uid: uid, state: int32(sb.GetState()), sandbox: true}
		uids[uid] = struct{}{}
	}
	for _, c := range containers.GetContainers() {
		uid := types.UID(c.GetLabels()[kuberuntime.KubernetesPodUIDLabel])
		if uid == "" {
			continue
		}
		now[c.GetId()] = record{uid: uid, state: int32(c.GetState()) + containerStateOffset}
		uids[uid] = struct{}{}
	}
	g.opts.Metrics.setRunning(sandboxes.GetItems(), containers.GetContainers())

	changed := map[types.UID]bool{}
	for id, rec := range now {
		if old, ok := g.last[id]; !ok || old.state != rec.state {
			changed[rec.uid] = true
		}
	}
	for id, rec := range g.last {
		if _, ok := now[id]; !ok {
			changed[rec.uid] = true
		}
	}
	listing := newListing(now)
	// The runtime is the truth: a cached status read before this listing
	// that shows sandboxes or containers the listing does not, or in other
	// states, marks its pod changed too. The diff above misses what was
	// created and reported by events between two relists and then lost
	// (a runtime restart that wiped its state, removal behind sync's
	// back): the previous listing never held it. The kubelet's generic
	// PLEG relists every second and so lists nearly everything; with
	// events the relist is minutes apart.
	for uid, ps := range g.opts.Cache.ReadBefore(listedAt) {
		if !changed[uid] && !listing.matches(ps, uid) {
			changed[uid] = true
		}
	}
	g.last = now
	g.recordListing(uids, sandboxes.GetItems(), containers.GetContainers(), listedAt)
	for uid := range changed {
		g.updateCache(ctx, uid, listing, listedAt)
		g.send(uid)
	}
}

// refreshRunning lists the node for the running pod and container gauges
// alone. While events flow the relist runs every few minutes, and the
// gauges it sets would go stale; a scrape of stale gauges calls this
// instead (Metrics.refresh).
func (g *PLEG) refreshRunning(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	sandboxes, err := g.opts.CRI.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		logctx.From(ctx).Warn("running pod metrics: cannot list sandboxes", zap.Error(err))
		return
	}
	containers, err := g.opts.CRI.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		logctx.From(ctx).Warn("running pod metrics: cannot list containers", zap.Error(err))
		return
	}
	g.opts.Metrics.setRunning(sandboxes.GetItems(), containers.GetContainers())
}

// updateCache brings the cached status of a pod the relist saw change up to
// date: unless the cache already shows every sandbox and container of the
// pod in the state listed, the pod's status is read into it. Matches the
// kubelet's GenericPLEG.updateCache, which reads every changed pod; three
// reads are saved:
//   - when the cache agrees with the listing (a container event or the
//     sync's own read after acting got there first), nothing is read;
//   - when the cached status was read after the listing began, it shows
//     everything the listing does or later, and nothing is read either (a
//     relist that overlaps a burst of starts lists pods halfway created
//     whose syncs have since read them whole);
//   - when the pod's worker is in SyncPod (the change is most likely its
//     own doing), the entry is only invalidated from listedAt on: a sync
//     that acts reads the status after its actions anyway, and the next
//     sync reads the runtime if that read is older than the listing.
//
// A failed read invalidates the entry too, so the worker reads the runtime
// itself.
func (g *PLEG) updateCache(ctx context.Context, uid types.UID, now listing, listedAt time.Time) {
	if !g.opts.Wanted(uid) {
		return
	}
	if cached, readAt, ok := g.opts.Cache.Get(uid); ok && (!readAt.Before(listedAt) || now.matches(cached, uid)) {
		return
	}
	if g.opts.Syncing(uid) {
		g.opts.Cache.Invalidate(uid, listedAt)
		return
	}
	readAt := time.Now()
	ps, err := g.opts.Runtime.GetPodStatus(ctx, uid, "", "")
	if err != nil {
		logctx.From(ctx).Warn("relist: cannot read pod status", zap.String("podUID", string(uid)), zap.Error(err))
		g.opts.Cache.Invalidate(uid, listedAt)
		return
	}
	g.opts.Cache.Set(uid, ps, readAt)
}

// listing is one relist's sandboxes and containers by ID, with how many
// each pod has.
type listing struct {
	records map[string]record
	perPod  map[types.UID]int
}

func newListing(records map[string]record) listing {
	perPod := make(map[types.UID]int)
	for _, rec := range records {
		perPod[rec.uid]++
	}
	return listing{records: records, perPod: perPod}
}

// matches reports whether ps holds exactly the sandboxes and containers the
// relist listed for uid, each in the state listed.
func (l listing) matches(ps *container.PodStatus, uid types.UID) bool {
	if l.perPod[uid] != len(ps.SandboxStatuses)+len(ps.ContainerStatuses) {
		return false
	}
	for _, sb := range ps.SandboxStatuses {
		rec, ok := l.records[sb.GetId()]
		if !ok || rec.uid != uid || !rec.sandbox || rec.state != int32(sb.GetState()) {
			return false
		}
	}
	for _, cs := range ps.ContainerStatuses {
		rec, ok := l.records[cs.ID.ID]
		if !ok || rec.uid != uid || rec.sandbox {
			return false
		}
		if container.StateFromCRI(runtimeapi.ContainerState(rec.state-containerStateOffset)) != cs.State {
			return false
		}
	}
	return true
}
