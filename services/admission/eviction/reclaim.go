package eviction

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
)

// DefaultNodeReclaimTimeout is how long the manager waits for sync to
// report a node-level reclaim when Config.NodeReclaimTimeout is zero: the
// kubelet's eviction monitoring interval, so a silent sync delays an
// eviction by one cycle at most.
const DefaultNodeReclaimTimeout = 10 * time.Second

// reclaimSubscriberBuffer is how many reclaim requests a watcher may fall
// behind by; the manager has at most one outstanding, so one more is slack.
const reclaimSubscriberBuffer = 2

// errNoReclaimer is a node-level reclaim nobody was asked to carry out: no
// sync watches the manager's requests.
var errNoReclaimer = errors.New("no sync is watching for reclaim requests")

// NodeReclaim says which node-level garbage collections free a signal's
// resource: the kubelet's nodeReclaimFuncs, which sync runs in this order.
type NodeReclaim struct {
	// Containers asks for every dead container and sandbox no running pod
	// needs to be removed, terminated pods' included (the kubelet's
	// ContainerGC.DeleteAllUnusedContainers).
	Containers bool
	// Images asks for every image no container uses to be removed, but
	// pinned ones and those younger than the image GC minimum age (the
	// kubelet's ImageGC.DeleteUnusedImages).
	Images bool
}

func (r NodeReclaim) any() bool { return r.Containers || r.Images }

// signalToNodeReclaim is the kubelet's buildSignalToNodeReclaimFuncs for the
// filesystems splitlet observes. With a dedicated imagefs, nodefs pressure
// reclaims nothing (the kubelet's "should just delete logs", which it does
// not do either) and imagefs pressure removes dead containers then unused
// images; on one shared filesystem every disk signal does both. The
// kubelet's third case, a container filesystem split from the imagefs
// (KubeletSeparateDiskGC: nodefs pressure removes containers, imagefs
// pressure images), needs the containerfs signals splitlet does not
// observe. Memory and pid signals reclaim nothing at node level.
func signalToNodeReclaim(dedicatedImageFs bool) map[Signal]NodeReclaim {
	both := NodeReclaim{Containers: true, Images: true}
	if dedicatedImageFs {
		return map[Signal]NodeReclaim{
			SignalNodeFsAvailable:   {},
			SignalNodeFsInodesFree:  {},
			SignalImageFsAvailable:  both,
			SignalImageFsInodesFree: both,
		}
	}
	return map[Signal]NodeReclaim{
		SignalNodeFsAvailable:   both,
		SignalNodeFsInodesFree:  both,
		SignalImageFsAvailable:  both,
		SignalImageFsInodesFree: both,
	}
}

// ReclaimRequest is a node-level reclaim the manager asks sync for before
// it evicts a pod for Signal.
type ReclaimRequest struct {
	// ID names the request in ReportReclaim.
	ID     string
	Signal Signal
	NodeReclaim
}

// ReclaimReport is sync's answer to a ReclaimRequest.
type ReclaimReport struct {
	// ImageBytesFreed is the size of the images removed.
	ImageBytesFreed int64
	// Err is why the reclaim failed in part or whole; the manager observes
	// the node again either way, as the kubelet does.
	Err error
}

// SubscribeReclaims returns a channel receiving every node-level reclaim
// the manager asks for from now on; it is closed when ctx is done. A
// subscriber carries the request out and answers with ReportReclaim. When
// several subscribe (one sync per node is the rule, but a second one may
// connect while the first reconnects), each gets every request and the
// first report settles it.
func (m *Manager) SubscribeReclaims(ctx context.Context) <-chan ReclaimRequest {
	ch := make(chan ReclaimRequest, reclaimSubscriberBuffer)
	m.reclaimMu.Lock()
	m.reclaimSubs[ch] = struct{}{}
	m.reclaimMu.Unlock()
	go func() {
		<-ctx.Done()
		m.reclaimMu.Lock()
		delete(m.reclaimSubs, ch)
		close(ch)
		m.reclaimMu.Unlock()
	}()
	return ch
}

// ReportReclaim delivers sync's answer to the request named id. An id the
// manager no longer waits for (answered by another subscriber, timed out,
// or never asked) is an error wrapping errdefs.ErrNotFound.
func (m *Manager) ReportReclaim(_ context.Context, id string, report ReclaimReport) error {
	m.reclaimMu.Lock()
	done, ok := m.reclaimPending[id]
	delete(m.reclaimPending, id)
	m.reclaimMu.Unlock()
	if !ok {
		return fmt.Errorf("reclaim request %q is not awaited: %w", id, errdefs.ErrNotFound)
	}
	done <- report // buffered: the waiter may have gone
	return nil
}

// askNodeReclaim publishes a request to every reclaim subscriber and waits
// for the first report, up to Config.NodeReclaimTimeout. Without a
// subscriber it fails at once: nobody would answer.
func (m *Manager) askNodeReclaim(ctx context.Context, signal Signal, what NodeReclaim) (ReclaimReport, error) {
	req := ReclaimRequest{ID: newReclaimID(), Signal: signal, NodeReclaim: what}
	done := make(chan ReclaimReport, 1)
	m.reclaimMu.Lock()
	if len(m.reclaimSubs) == 0 {
		m.reclaimMu.Unlock()
		return ReclaimReport{}, errNoReclaimer
	}
	m.reclaimPending[req.ID] = done
	sent := 0
	for ch := range m.reclaimSubs {
		select {
		case ch <- req:
			sent++
		default:
		}
	}
	m.reclaimMu.Unlock()
	defer func() {
		m.reclaimMu.Lock()
		delete(m.reclaimPending, req.ID)
		m.reclaimMu.Unlock()
	}()
	if sent == 0 {
		return ReclaimReport{}, errors.New("no reclaim subscriber is reading")
	}
	t := time.NewTimer(m.cfg.NodeReclaimTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r, nil
	case <-t.C:
		return ReclaimReport{}, fmt.Errorf("no reclaim report within %s (a sync older than node-level reclaim ignores the request)", m.cfg.NodeReclaimTimeout)
	case <-ctx.Done():
		return ReclaimReport{}, ctx.Err()
	}
}

// reclaimNodeLevelResources is the kubelet's: it asks sync to garbage
// collect what frees the signal's resource, observes the node again and
// reports whether every threshold is then clear of its minimum reclaim,
// grace periods ignored, so no pod need be evicted. A failed or unanswered
// reclaim is logged and the node observed all the same: something else
// (sync's periodic garbage collection, a pod ending) may have freed it.
func (m *Manager) reclaimNodeLevelResources(ctx context.Context, signal Signal, resourceToReclaim v1.ResourceName) bool {
	what := m.nodeReclaims[signal]
	if !what.any() {
		return false
	}
	log := logctx.From(ctx)
	report, err := m.askNodeReclaim(ctx, signal, what)
	if err == nil {
		err = report.Err
	}
	if err != nil {
		log.Info("eviction manager: unexpected error when attempting to reduce resource pressure",
			zap.String("resourceName", string(resourceToReclaim)), zap.Error(err))
	} else {
		log.Info("eviction manager: node-level reclaim done", zap.String("resourceName", string(resourceToReclaim)),
			zap.Bool("containers", what.Containers), zap.Bool("images", what.Images),
			zap.Int64("imageBytesFreed", report.ImageBytesFreed))
	}
	if ctx.Err() != nil {
		return false
	}
	summary, err := m.provider.Observe(ctx)
	if err != nil {
		log.Error("eviction manager: failed to get summary stats after resource reclaim", zap.Error(err))
		return false
	}
	return len(thresholdsMet(m.cfg.Thresholds, summary.Signals, true)) == 0
}

func newReclaimID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
