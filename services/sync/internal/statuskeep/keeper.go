// Package statuskeep writes each pod's generated status to the pod store
// as it changes, so that a restarted sync reports the same start time,
// condition transition times, pod IPs and static pod creation times as
// before. The kubelet keeps these in its status manager and, across its
// own restarts, in the API server (generateAPIPodStatus falls back to the
// pod's status from the API server); splitlet's API and file sources have
// no API server behind them, so sync keeps them itself.
//
//	k := statuskeep.New(st, pods)
//	go k.Run(ctx) // returns after writing what it has, once ctx ends
package statuskeep

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/store"
)

// Writer stores kept statuses; a nil value forgets the pod
// (store.Store.PutStatuses).
type Writer interface {
	PutStatuses(map[types.UID]*store.KeptStatus) error
}

// Pods is where statuses come from (podmanager.Manager).
type Pods interface {
	Subscribe(buffer int) (<-chan podmanager.Event, func())
	GetPodsWithStatus() []*v1.Pod
	Seq() uint64
}

var (
	_ Writer = (*store.Store)(nil)
	_ Pods   = (*podmanager.Manager)(nil)
)

// retryPeriod is how long a failed write waits before it is tried again
// with whatever changed meanwhile.
const retryPeriod = time.Second

// Keeper follows the pod manager and writes its statuses.
type Keeper struct {
	w    Writer
	pods Pods
	// saved is the Seq of the last pod manager change on disk.
	saved atomic.Uint64
}

// New returns a keeper writing the statuses of pods to w.
func New(w Writer, pods Pods) *Keeper { return &Keeper{w: w, pods: pods} }

// Register adds splitlet_status_keeper_unsaved_changes to reg: the pod
// changes published and not yet on disk. Once it reads 0, every status a
// client has seen survives a crash of sync.
func (k *Keeper) Register(reg prometheus.Registerer) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "splitlet_status_keeper_unsaved_changes",
		Help: "Pod changes published and not yet written to the pod store; 0 means a crash of sync loses no pod status.",
	}, func() float64 { return float64(k.pods.Seq() - k.saved.Load()) }))
}

// Run writes statuses until ctx ends, then writes what it still holds and
// returns, so the caller may close the store after it. Changes that arrive
// while a write is under way are written together by the next one. A
// subscription closed for falling behind is replaced, and every pod's
// status written again.
func (k *Keeper) Run(ctx context.Context) {
	log := logctx.From(ctx)
	pending := map[types.UID]*store.KeptStatus{}
	for {
		// Every change after the subscription comes on it; every change up
		// to base happened before the listing below, which shows it. (Read
		// before subscribing, base could miss a change made in between,
		// which the listing shows but the gauge would count unsaved.)
		events, cancel := k.pods.Subscribe(1024)
		base := k.pods.Seq()
		for _, p := range k.pods.GetPodsWithStatus() {
			keep(pending, podmanager.Event{Type: podmanager.Modified, Pod: p})
		}
		seen := base
		closed := false
		for !closed {
			var retry <-chan time.Time
			if k.flush(log, pending) {
				k.saved.Store(seen)
			} else {
				retry = time.After(retryPeriod)
			}
			select {
			case <-ctx.Done():
				// What was published before the end is written too.
				last, _ := drain(events, pending)
				seen = max(seen, last)
				cancel()
				if k.flush(log, pending) {
					k.saved.Store(seen)
				}
				return
			case <-retry:
			case ev, ok := <-events:
				if !ok {
					closed = true
					break
				}
				seen = max(seen, ev.Seq)
				keep(pending, ev)
				var last uint64
				last, closed = drain(events, pending)
				seen = max(seen, last)
			}
		}
		cancel()
	}
}

// drain moves every event already queued into pending, and returns the
// highest Seq among them and whether the channel was closed.
func drain(events <-chan podmanager.Event, pending map[types.UID]*store.KeptStatus) (last uint64, closed bool) {
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return last, true
			}
			last = max(last, ev.Seq)
			keep(pending, ev)
		default:
			return last, false
		}
	}
}

// keep records what ev means for the store. A pod seen with no generated
// status yet (its source's copy, as a restarted sync first reports it) is
// skipped: writing it would overwrite the status kept from before.
func keep(pending map[types.UID]*store.KeptStatus, ev podmanager.Event) {
	uid := ev.Pod.UID
	if ev.Type == podmanager.Deleted {
		pending[uid] = nil
		return
	}
	if ev.Pod.Status.Phase == "" {
		return
	}
	pending[uid] = &store.KeptStatus{Status: ev.Pod.Status, CreationTimestamp: ev.Pod.CreationTimestamp}
}

// flush writes pending and empties it, and reports whether it did; on
// failure pending is kept for the next try.
func (k *Keeper) flush(log *zap.Logger, pending map[types.UID]*store.KeptStatus) bool {
	if len(pending) == 0 {
		return true
	}
	if err := k.w.PutStatuses(pending); err != nil {
		log.Error("cannot keep pod statuses; retrying", zap.Int("pods", len(pending)), zap.Error(err))
		return false
	}
	clear(pending)
	return true
}
