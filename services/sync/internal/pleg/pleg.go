// Package pleg is sync's pod lifecycle event generator: it learns from the
// runtime which pods changed, brings their entries in the status cache up to
// date, and hands them to the sync loop to wake their workers. It is the
// kubelet's GenericPLEG (pkg/kubelet/pleg/generic.go: a relist that diffs
// sandbox and container states) and EventedPLEG (pkg/kubelet/pleg/evented.go:
// the runtime's GetContainerEvents stream) in one, with the relist as the
// only source on runtimes without events (containerd 1.6) and the safety
// net otherwise.
//
// The rule by which a sync may use a cached status instead of reading the
// runtime is the sync loop's (services/sync/internal/syncloop/statuscache.go);
// this package supplies its two inputs: fresh cache entries, and whether the
// runtime may hold anything of a pod (RuntimeMayHold).
//
// Usage sketch:
//
//	g := pleg.New(pleg.Options{CRI: cri, Runtime: manager, Cache: cache, ...})
//	go g.Run(ctx)
//	for range g.Ready() { for _, uid := range g.Take() { wake(uid) } }
package pleg

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// Runtime is what the PLEG reads pod statuses with (kuberuntime.Manager).
type Runtime interface {
	// GetPodStatus reads one pod's status from the runtime, for a pod a
	// relist saw change.
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error)
	// GeneratePodStatus builds the pod status a container event carries,
	// without a runtime call.
	GeneratePodStatus(ctx context.Context, ev *runtimeapi.ContainerEventResponse) (*container.PodStatus, error)
}

// Options are the PLEG's dependencies and settings. CRI, Runtime and Cache
// are required.
type Options struct {
	// CRI is the runtime client the PLEG lists sandboxes and containers
	// and follows container events with.
	CRI runtimeapi.RuntimeServiceClient
	// Runtime reads and builds the statuses the PLEG caches.
	Runtime Runtime
	// Cache receives the statuses of changed pods (the kubelet's podCache).
	Cache *container.Cache
	// RelistPeriod is the relist period (the kubelet's 1 s); 0 means 1 s.
	RelistPeriod time.Duration
	// EventedRelistPeriod is the relist period while the event stream is
	// live (the kubelet's eventedPlegRelistPeriod, 300 s); 0 keeps
	// RelistPeriod throughout.
	EventedRelistPeriod time.Duration
	// Metrics receive the relist duration and the running pod and
	// container gauges; nil creates unregistered ones.
	Metrics *Metrics
	// Wanted says which pods' statuses to cache (those sync handles); nil
	// caches every pod's.
	Wanted func(types.UID) bool
	// Syncing says whether the pod's worker is in SyncPod; nil: never.
	Syncing func(types.UID) bool
	// Listed receives every complete relist's listing and when it began;
	// nil: nobody.
	Listed func(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, listedAt time.Time)
}

// PLEG wakes pods' workers when the runtime reports a change of their
// containers or sandboxes. While the event stream is live the relist runs
// every EventedRelistPeriod instead of every RelistPeriod, as the kubelet's
// generic PLEG runs at eventedPlegRelistPeriod beside its EventedPLEG; when
// the stream is lost the PLEG relists at once (events may have been missed)
// and then every RelistPeriod until the stream is live again.
//
// Before it wakes a worker it brings the pod's entry in the status cache up
// to date, so the worker need not read the runtime: an event's status is
// built from the event (Runtime.GeneratePodStatus), and a relist reads the
// status of a changed pod (Runtime.GetPodStatus) unless the cache already
// shows what the relist saw.
type PLEG struct {
	opts Options
	// ready is signalled when pending gains a pod.
	ready chan struct{}
	// relistNow asks Run for a relist at once (the event stream went live
	// or was lost).
	relistNow chan struct{}

	// last is the state of every sandbox and container at the previous
	// relist, keyed by ID. Only relist touches it.
	last map[string]record

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
	// event, or Touch); a relist whose listing begins later drops them.
	// Together they say which pods the runtime may hold anything of
	// (RuntimeMayHold).
	relisted   bool
	listedUIDs map[types.UID]struct{}
	touched    map[types.UID]time.Time
}

// New returns a PLEG with opts; Run starts it.
func New(opts Options) *PLEG {
	if opts.RelistPeriod <= 0 {
		opts.RelistPeriod = time.Second
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	if opts.Wanted == nil {
		opts.Wanted = func(types.UID) bool { return true }
	}
	if opts.Syncing == nil {
		opts.Syncing = func(types.UID) bool { return false }
	}
	return &PLEG{
		opts:  opts,
		ready: make(chan struct{}, 1), relistNow: make(chan struct{}, 1), eventsReady: make(chan struct{}, 1),
		received: map[types.UID]*runtimeapi.ContainerEventResponse{},
		last:     map[string]record{}, touched: map[types.UID]time.Time{}, pending: map[types.UID]struct{}{},
	}
}

// Ready is signalled when pods with a lifecycle change are waiting: Take
// them.
func (g *PLEG) Ready() <-chan struct{} { return g.ready }

// Take returns the pods with a lifecycle change since the last Take, each
// once.
func (g *PLEG) Take() []types.UID {
	g.mu.Lock()
	defer g.mu.Unlock()
	uids := slices.Collect(maps.Keys(g.pending))
	clear(g.pending)
	return uids
}

// Run follows the event stream and relists, at once and then every relist
// period, until ctx ends. A scrape of stale running gauges lists the node
// meanwhile (Metrics).
func (g *PLEG) Run(ctx context.Context) {
	g.opts.Metrics.setRefresh(func() { g.refreshRunning(ctx) })
	go g.watchEvents(ctx)
	t := time.NewTimer(g.opts.RelistPeriod)
	defer t.Stop()
	for {
		g.Relist(ctx)
		t.Reset(g.relistPeriod())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-g.relistNow:
		}
	}
}

// relistPeriod is EventedRelistPeriod while the event stream is live, else
// RelistPeriod. Matches the kubelet's EventedPLEG, which starts the generic
// PLEG with eventedPlegRelistPeriod and, when the stream fails
// (watchEventsChannel), restarts it with the default relist period.
func (g *PLEG) relistPeriod() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.eventsLive && g.opts.EventedRelistPeriod > 0 {
		return g.opts.EventedRelistPeriod
	}
	return g.opts.RelistPeriod
}

// setEventsLive records whether the event stream delivers. Either change
// asks for a relist at once: when the stream goes live, so that whatever
// changed between the previous relist and the subscription is found (every
// later change comes as an event), and when it is lost, because events may
// have been missed (the kubelet's watchEventsChannel forces a relist on a
// stream error too).
func (g *PLEG) setEventsLive(ctx context.Context, live bool) {
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
		log.Warn("container event stream lost, relisting now", zap.Duration("relistInterval", g.opts.RelistPeriod))
	}
	select {
	case g.relistNow <- struct{}{}:
	default:
	}
}

// Touch records that the runtime may hold something of uid since at, which
// the last relist cannot show: sync forgot the pod (a pod of the same UID
// may come back and must read what is left of the old one).
func (g *PLEG) Touch(uid types.UID, at time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.touchLocked(uid, at)
}

func (g *PLEG) touchLocked(uid types.UID, at time.Time) {
	if old, ok := g.touched[uid]; !ok || at.After(old) {
		g.touched[uid] = at
	}
}

// RuntimeMayHold reports whether the runtime may hold a sandbox or
// container of uid, as far as the PLEG knows: always until a complete
// relist has run; after that, when the last complete relist listed one or
// the pod was touched (an event named it, or Touch) since its listing
// began. A false answer is only as good as the assumption that nobody but
// the pod's own worker creates anything for it.
func (g *PLEG) RuntimeMayHold(uid types.UID) bool {
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

// send hands the pod to the sync loop (Take) without waiting for it.
func (g *PLEG) send(uid types.UID) {
	g.mu.Lock()
	g.pending[uid] = struct{}{}
	g.mu.Unlock()
	select {
	case g.ready <- struct{}{}:
	default:
	}
}
