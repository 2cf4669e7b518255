package syncloop

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// pleg is the pod lifecycle event generator. It wakes a pod's worker when
// the runtime reports a change of the pod's containers or sandboxes, from two
// sources: the runtime's GetContainerEvents stream where implemented (the
// kubelet's EventedPLEG), and a relist every interval that diffs sandbox and
// container states (the kubelet's GenericPLEG), which is the only source on
// runtimes without events (containerd 1.6) and the safety net otherwise.
// While the event stream is live the relist runs every eventedInterval
// instead of every interval, as the kubelet's generic PLEG runs at
// eventedPlegRelistPeriod beside its EventedPLEG; when the stream is lost
// the PLEG relists at once (events may have been missed) and then every
// interval until the stream is live again.
//
// Before it wakes a worker it brings the pod's entry in the status cache up
// to date, so the worker need not read the runtime: an event's status is
// built from the event (podStatusGenerator), and a relist reads the status
// of a changed pod (GetPodStatus) unless the cache already shows what the
// relist saw.
type pleg struct {
	rt       runtimeapi.RuntimeServiceClient
	interval time.Duration
	// eventedInterval is the relist period while the event stream is live
	// (0: interval throughout).
	eventedInterval time.Duration
	metrics         *Metrics
	// ready is signalled when pending gains a pod.
	ready chan struct{}
	// relistNow asks Run for a relist at once (the event stream went live
	// or was lost).
	relistNow chan struct{}

	// cache receives the statuses; nil keeps none. statuses reads a pod's
	// status for a relist; generator builds one from an event (nil: events
	// only wake). wanted says which pods' statuses to keep (nil: all).
	// syncing says whether the pod's worker is in SyncPod (nil: never).
	cache     *container.Cache
	statuses  podStatusReader
	generator podStatusGenerator
	wanted    func(types.UID) bool
	syncing   func(types.UID) bool

	// listed receives every complete relist's listing and when it began
	// (nil: nobody).
	listed func(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, listedAt time.Time)

	// last is the state of every sandbox and container at the previous
	// relist, keyed by ID.
	last map[string]plegRecord

	mu sync.Mutex
	// pending holds the pods with a lifecycle change the sync loop has not
	// taken yet. A set rather than a queue: neither the event stream nor a
	// relist ever waits for a busy sync loop (a blocked stream reader
	// makes the runtime drop the subscription), and a pod changed twice is
	// woken once, which is enough since its status is already cached.
	pending map[types.UID]struct{}
	// received holds the newest event of each pod not yet handled, and
	// eventsReady is signalled when it gains one: the stream reader only
	// queues, so that it keeps up with a burst (a reader that falls behind
	// is dropped by the runtime, and relisting takes over), and a pod's
	// older unhandled event is dropped for its newer one, which carries
	// the pod's whole current status (handleEvents).
	received    map[types.UID]*runtimeapi.ContainerEventResponse
	eventsReady chan struct{}
	// eventsLive says the event stream is delivering.
	eventsLive bool
	// relisted says a complete relist has run; listedUIDs are the pods it
	// listed a sandbox or container of. touched are the pods the runtime
	// may have gained something of since, with when that was learned (an
	// event, or a pod forgotten by housekeeping); a relist whose listing
	// begins later drops them. Together they say which pods the runtime
	// may hold anything of (runtimeMayHold).
	relisted   bool
	listedUIDs map[types.UID]struct{}
	touched    map[types.UID]time.Time
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
	return &pleg{
		rt: rt, interval: interval, metrics: metrics,
		ready: make(chan struct{}, 1), relistNow: make(chan struct{}, 1), eventsReady: make(chan struct{}, 1),
		received: map[types.UID]*runtimeapi.ContainerEventResponse{},
		last:     map[string]plegRecord{}, touched: map[types.UID]time.Time{}, pending: map[types.UID]struct{}{},
	}
}

// Ready is signalled when pods with a lifecycle change are waiting: Take
// them.
func (g *pleg) Ready() <-chan struct{} { return g.ready }

// Take returns the pods with a lifecycle change since the last Take, each
// once.
func (g *pleg) Take() []types.UID {
	g.mu.Lock()
	defer g.mu.Unlock()
	uids := slices.Collect(maps.Keys(g.pending))
	clear(g.pending)
	return uids
}

// Run follows the event stream and relists, at once and then every
// relistPeriod, until ctx ends.
func (g *pleg) Run(ctx context.Context) {
	go g.watchEvents(ctx)
	t := time.NewTimer(g.interval)
	defer t.Stop()
	for {
		g.relist(ctx)
		t.Reset(g.relistPeriod())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-g.relistNow:
		}
	}
}

// relistPeriod is eventedInterval while the event stream is live, else
// interval. Matches the kubelet's EventedPLEG, which starts the generic
// PLEG with eventedPlegRelistPeriod and, when the stream fails
// (watchEventsChannel), restarts it with the default relist period.
func (g *pleg) relistPeriod() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.eventsLive && g.eventedInterval > 0 {
		return g.eventedInterval
	}
	return g.interval
}

// setEventsLive records whether the event stream delivers. Either change
// asks for a relist at once: when the stream goes live, so that whatever
// changed between the previous relist and the subscription is found (every
// later change comes as an event), and when it is lost, because events may
// have been missed (the kubelet's watchEventsChannel forces a relist on a
// stream error too).
func (g *pleg) setEventsLive(ctx context.Context, live bool) {
	g.mu.Lock()
	changed := g.eventsLive != live
	g.eventsLive = live
	g.mu.Unlock()
	if !changed {
		return
	}
	log := logctx.From(ctx)
	if live {
		log.Info("container events flowing, relisting less often", zap.Duration("relistInterval", g.relistPeriod()))
	} else {
		log.Warn("container event stream lost, relisting now", zap.Duration("relistInterval", g.interval))
	}
	select {
	case g.relistNow <- struct{}{}:
	default:
	}
}

// touch records that the runtime may hold something of uid since at, which
// the last relist cannot show.
func (g *pleg) touch(uid types.UID, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.touched[uid]; !ok || at.After(old) {
		g.touched[uid] = at
	}
}

// runtimeMayHold reports whether the runtime may hold a sandbox or
// container of uid, as far as the PLEG knows: always until a complete
// relist has run; after that, when the last complete relist listed one or
// the pod was touched since its listing began. A false answer is only as
// good as the assumption that nobody but the pod's own worker creates
// anything for it.
func (g *pleg) runtimeMayHold(uid types.UID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.relisted {
		return true
	}
	if _, ok := g.listedUIDs[uid]; ok {
		return true
	}
	_, ok := g.touched[uid]
	return ok
}

// recordListing records what a complete relist whose listing began at listedAt
// saw, and hands the listing on.
func (g *pleg) recordListing(uids map[types.UID]struct{}, sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, listedAt time.Time) {
	g.mu.Lock()
	g.relisted, g.listedUIDs = true, uids
	for uid, at := range g.touched {
		if at.Before(listedAt) {
			delete(g.touched, uid)
		}
	}
	g.mu.Unlock()
	if g.listed != nil {
		g.listed(sandboxes, containers, listedAt)
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
	uids := make(map[types.UID]struct{}, len(sandboxes.GetItems()))
	for _, sb := range sandboxes.GetItems() {
		uid := types.UID(sb.GetLabels()[kuberuntime.KubernetesPodUIDLabel])
		if uid == "" {
			continue
		}
		now[sb.GetId()] = plegRecord{uid: uid, state: int32(sb.GetState()), sandbox: true}
		uids[uid] = struct{}{}
	}
	for _, c := range containers.GetContainers() {
		uid := types.UID(c.GetLabels()[kuberuntime.KubernetesPodUIDLabel])
		if uid == "" {
			continue
		}
		now[c.GetId()] = plegRecord{uid: uid, state: int32(c.GetState()) + containerStateOffset}
		uids[uid] = struct{}{}
	}
	g.metrics.setRunning(sandboxes.GetItems(), containers.GetContainers())

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
	if g.cache != nil {
		for uid, ps := range g.cache.ReadBefore(listedAt) {
			if !changed[uid] && !listing.matches(ps, uid) {
				changed[uid] = true
			}
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
func (g *pleg) refreshRunning(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	sandboxes, err := g.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		logctx.From(ctx).Warn("running pod metrics: cannot list sandboxes", zap.Error(err))
		return
	}
	containers, err := g.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		logctx.From(ctx).Warn("running pod metrics: cannot list containers", zap.Error(err))
		return
	}
	g.metrics.setRunning(sandboxes.GetItems(), containers.GetContainers())
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
func (g *pleg) updateCache(ctx context.Context, uid types.UID, now listing, listedAt time.Time) {
	if g.cache == nil || g.statuses == nil || (g.wanted != nil && !g.wanted(uid)) {
		return
	}
	if cached, _, ok := g.cache.Get(uid); ok && now.matches(cached, uid) {
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

// listing is one relist's sandboxes and containers by ID, with how many
// each pod has.
type listing struct {
	records map[string]plegRecord
	perPod  map[types.UID]int
}

func newListing(records map[string]plegRecord) listing {
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

// send hands the pod to the sync loop (Take) without waiting for it.
func (g *pleg) send(uid types.UID) {
	g.mu.Lock()
	g.pending[uid] = struct{}{}
	g.mu.Unlock()
	select {
	case g.ready <- struct{}{}:
	default:
	}
}

// watchEvents follows GetContainerEvents, reconnecting after errors, until
// ctx ends. A runtime that does not implement it (Unimplemented) leaves
// relisting alone, at interval.
func (g *pleg) watchEvents(ctx context.Context) {
	log := logctx.From(ctx)
	go g.handleEvents(ctx)
	for {
		err := g.followEvents(ctx)
		if ctx.Err() != nil {
			return
		}
		g.setEventsLive(ctx, false)
		if status.Code(err) == codes.Unimplemented {
			log.Info("runtime has no container events, relying on relist", zap.Duration("relistInterval", g.interval))
			return
		}
		log.Warn("container event stream ended, reconnecting", zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// followEvents opens the event stream and handles its events until it
// fails, returning why. The stream counts as live once the runtime has
// answered the call with headers: Header blocks until then, and answers
// nothing when the call failed at once, as an Unimplemented one does (a
// trailers-only answer, whose error Recv then returns). A gateway that
// sends its headers only with the first event makes that first event the
// moment the stream goes live.
func (g *pleg) followEvents(ctx context.Context) error {
	stream, err := g.rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		return err
	}
	if md, _ := stream.Header(); md != nil {
		g.setEventsLive(ctx, true)
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			return err
		}
		g.setEventsLive(ctx, true)
		if uid := types.UID(ev.GetPodSandboxStatus().GetMetadata().GetUid()); uid != "" {
			g.queueEvent(uid, ev)
		}
	}
}

// queueEvent records that the runtime holds something of uid and queues
// the event for handleEvents, replacing an older unhandled one of the pod.
func (g *pleg) queueEvent(uid types.UID, ev *runtimeapi.ContainerEventResponse) {
	now := time.Now()
	g.mu.Lock()
	if old, ok := g.touched[uid]; !ok || now.After(old) {
		g.touched[uid] = now
	}
	if old, ok := g.received[uid]; !ok || ev.GetCreatedAt() >= old.GetCreatedAt() {
		g.received[uid] = ev
	}
	g.mu.Unlock()
	select {
	case g.eventsReady <- struct{}{}:
	default:
	}
}

// handleEvents caches the status each queued event carries and wakes the
// pod's worker, until ctx ends. Keeping only a pod's newest unhandled
// event loses nothing: an event carries the status of every container of
// its sandbox, and an event of another sandbox that drops an older one's
// news is refused by the cache (SetFromEvent), which then reads.
func (g *pleg) handleEvents(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.eventsReady:
		}
		g.mu.Lock()
		batch := g.received
		g.received = make(map[types.UID]*runtimeapi.ContainerEventResponse, len(batch))
		g.mu.Unlock()
		g.metrics.runtimeChanged()
		for uid, ev := range batch {
			g.cacheEvent(ctx, uid, ev)
			g.send(uid)
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
