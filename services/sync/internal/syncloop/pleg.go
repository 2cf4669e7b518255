package syncloop

import (
	"context"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/logctx"
)

// pleg is the pod lifecycle event generator. It wakes a pod's worker when
// the runtime reports a change of the pod's containers or sandboxes, from two
// sources: the runtime's GetContainerEvents stream where implemented (the
// kubelet's EventedPLEG), and a relist every interval that diffs sandbox and
// container states (the kubelet's GenericPLEG), which is the only source on
// runtimes without events (containerd 1.6) and the safety net otherwise.
//
// Before it wakes a worker it brings the pod's entry in the status cache up
// to date, so the worker need not read the runtime: an event's status is
// built from the event (podStatusGenerator), and a relist reads the status
// of a changed pod (GetPodStatus) unless the cache already shows what the
// relist saw.
type pleg struct {
	rt       runtimeapi.RuntimeServiceClient
	interval time.Duration
	metrics  *Metrics
	events   chan types.UID

	// cache receives the statuses; nil keeps none. statuses reads a pod's
	// status for a relist; generator builds one from an event (nil: events
	// only wake). wanted says which pods' statuses to keep (nil: all).
	// syncing says whether the pod's worker is in SyncPod (nil: never).
	cache     *container.Cache
	statuses  podStatusReader
	generator podStatusGenerator
	wanted    func(types.UID) bool
	syncing   func(types.UID) bool

	// last is the state of every sandbox and container at the previous
	// relist, keyed by ID.
	last map[string]plegRecord
}

// podStatusReader reads one pod's runtime status (Runtime.GetPodStatus).
type podStatusReader interface {
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error)
}

// plegRecord is a sandbox or container as a relist saw it. Container states
// are offset by containerStateOffset so they never equal a sandbox state.
type plegRecord struct {
	uid     types.UID
	state   int32
	sandbox bool
}

const containerStateOffset = 100

func newPLEG(rt runtimeapi.RuntimeServiceClient, interval time.Duration, metrics *Metrics) *pleg {
	return &pleg{rt: rt, interval: interval, metrics: metrics, events: make(chan types.UID, 1024), last: map[string]plegRecord{}}
}

// Events carries the UIDs of pods with a lifecycle change.
func (g *pleg) Events() <-chan types.UID { return g.events }

// Run relists every interval and follows the event stream until ctx ends.
func (g *pleg) Run(ctx context.Context) {
	go g.watchEvents(ctx)
	t := time.NewTicker(g.interval)
	defer t.Stop()
	for {
		g.relist(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// relist lists every sandbox and container and reports the pods whose
// members appeared, changed state or disappeared. Matches the kubelet's
// GenericPLEG.Relist, including kubelet_pleg_relist_duration_seconds and the
// running pod and container gauges it updates.
func (g *pleg) relist(ctx context.Context) {
	start := time.Now()
	defer func() { g.metrics.PLEGRelistDuration.Observe(time.Since(start).Seconds()) }()
	log := logctx.From(ctx)
	listedAt := time.Now()
	sandboxes, err := g.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		log.Warn("relist: cannot list sandboxes", zap.Error(err))
		return
	}
	containers, err := g.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		log.Warn("relist: cannot list containers", zap.Error(err))
		return
	}
	now := make(map[string]plegRecord, len(sandboxes.GetItems())+len(containers.GetContainers()))
	runningPods := 0
	for _, sb := range sandboxes.GetItems() {
		uid := types.UID(sb.GetLabels()[kuberuntime.KubernetesPodUIDLabel])
		if uid == "" {
			continue
		}
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			runningPods++
		}
		now[sb.GetId()] = plegRecord{uid: uid, state: int32(sb.GetState()), sandbox: true}
	}
	byState := map[string]int{}
	for _, c := range containers.GetContainers() {
		uid := types.UID(c.GetLabels()[kuberuntime.KubernetesPodUIDLabel])
		if uid == "" {
			continue
		}
		byState[containerStateLabel(c.GetState())]++
		now[c.GetId()] = plegRecord{uid: uid, state: int32(c.GetState()) + containerStateOffset}
	}
	g.metrics.RunningPods.Set(float64(runningPods))
	for _, s := range []string{"created", "running", "exited", "unknown"} {
		g.metrics.RunningContainers.WithLabelValues(s).Set(float64(byState[s]))
	}

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
	g.last = now
	for uid := range changed {
		g.updateCache(ctx, uid, now, listedAt)
		g.send(ctx, uid)
	}
}

// updateCache brings the cached status of a pod the relist saw change up to
// date: unless the cache already shows every sandbox and container of the
// pod in the state listed, the pod's status is read into it. Matches the
// kubelet's GenericPLEG.updateCache, which reads every changed pod; two
// reads are saved:
//   - when the cache agrees with the listing (a container event or the
//     sync's own read after acting got there first), nothing is read;
//   - when the pod's worker is in SyncPod (the change is most likely its
//     own doing), the entry is only invalidated from listedAt on: a sync
//     that acts reads the status after its actions anyway, and the next
//     sync reads the runtime if that read is older than the listing.
//
// A failed read invalidates the entry too, so the worker reads the runtime
// itself.
func (g *pleg) updateCache(ctx context.Context, uid types.UID, now map[string]plegRecord, listedAt time.Time) {
	if g.cache == nil || g.statuses == nil || (g.wanted != nil && !g.wanted(uid)) {
		return
	}
	if cached, _, ok := g.cache.Get(uid); ok && matchesListing(cached, uid, now) {
		return
	}
	if g.syncing != nil && g.syncing(uid) {
		g.cache.Invalidate(uid, listedAt)
		return
	}
	readAt := time.Now()
	ps, err := g.statuses.GetPodStatus(ctx, uid, "", "")
	if err != nil {
		logctx.From(ctx).Warn("relist: cannot read pod status", zap.String("podUID", string(uid)), zap.Error(err))
		g.cache.Invalidate(uid, listedAt)
		return
	}
	g.cache.Set(uid, ps, readAt)
}

// matchesListing reports whether ps holds exactly the sandboxes and
// containers the relist listed for uid, each in the state listed.
func matchesListing(ps *container.PodStatus, uid types.UID, now map[string]plegRecord) bool {
	listed := 0
	for _, rec := range now {
		if rec.uid == uid {
			listed++
		}
	}
	if listed != len(ps.SandboxStatuses)+len(ps.ContainerStatuses) {
		return false
	}
	for _, sb := range ps.SandboxStatuses {
		rec, ok := now[sb.GetId()]
		if !ok || rec.uid != uid || !rec.sandbox || rec.state != int32(sb.GetState()) {
			return false
		}
	}
	for _, cs := range ps.ContainerStatuses {
		rec, ok := now[cs.ID.ID]
		if !ok || rec.uid != uid || rec.sandbox {
			return false
		}
		if container.StateFromCRI(runtimeapi.ContainerState(rec.state-containerStateOffset)) != cs.State {
			return false
		}
	}
	return true
}

func containerStateLabel(s runtimeapi.ContainerState) string {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return "created"
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return "running"
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return "exited"
	}
	return "unknown"
}

func (g *pleg) send(ctx context.Context, uid types.UID) {
	select {
	case g.events <- uid:
	case <-ctx.Done():
	}
}

// watchEvents follows GetContainerEvents, reconnecting after errors. A
// runtime that does not implement it (Unimplemented) leaves relisting alone.
func (g *pleg) watchEvents(ctx context.Context) {
	log := logctx.From(ctx)
	for ctx.Err() == nil {
		stream, err := g.rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
		if err == nil {
			for {
				var ev *runtimeapi.ContainerEventResponse
				ev, err = stream.Recv()
				if err != nil {
					break
				}
				if uid := types.UID(ev.GetPodSandboxStatus().GetMetadata().GetUid()); uid != "" {
					g.cacheEvent(ctx, uid, ev)
					g.send(ctx, uid)
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.Unimplemented {
			log.Info("runtime has no container events, relying on relist", zap.Duration("relistInterval", g.interval))
			return
		}
		log.Warn("container event stream ended, reconnecting", zap.Error(err))
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// cacheEvent stores the status an event carries for a pod sync handles
// (the kubelet's EventedPLEG.processCRIEvents: GeneratePodStatus, then
// Cache.Set with the event's timestamp). The cache takes it only over an
// older, complete status that it does not contradict; an event whose status
// cannot be built invalidates the pod's entry instead.
func (g *pleg) cacheEvent(ctx context.Context, uid types.UID, ev *runtimeapi.ContainerEventResponse) {
	if g.cache == nil || g.generator == nil || (g.wanted != nil && !g.wanted(uid)) {
		return
	}
	receivedAt := time.Now()
	ps, err := g.generator.GeneratePodStatus(ctx, ev)
	if err != nil {
		logctx.From(ctx).Debug("cannot build pod status from event", zap.String("podUID", string(uid)), zap.Error(err))
		g.cache.Invalidate(uid, receivedAt)
		return
	}
	g.cache.SetFromEvent(uid, ps, time.Unix(0, ev.GetCreatedAt()), receivedAt)
}
