package pleg

import (
	"context"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/logctx"
)

// watchEvents follows GetContainerEvents, reconnecting after errors, until
// ctx ends. A runtime that does not implement it (Unimplemented) leaves
// relisting alone, at the relist period.
func (g *PLEG) watchEvents(ctx context.Context) {
	log := logctx.From(ctx)
	go g.handleEvents(ctx)
	for {
		err := g.followEvents(ctx)
		if ctx.Err() != nil {
			return
		}
		g.setEventsLive(ctx, false)
		if status.Code(err) == codes.Unimplemented {
			log.Info("runtime has no container events, relying on relist", zap.Duration("relistInterval", g.opts.RelistPeriod))
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
func (g *PLEG) followEvents(ctx context.Context) error {
	stream, err := g.opts.CRI.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
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
func (g *PLEG) queueEvent(uid types.UID, ev *runtimeapi.ContainerEventResponse) {
	now := time.Now()
	g.mu.Lock()
	g.touchLocked(uid, now)
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
func (g *PLEG) handleEvents(ctx context.Context) {
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
		g.opts.Metrics.runtimeChanged()
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
func (g *PLEG) cacheEvent(ctx context.Context, uid types.UID, ev *runtimeapi.ContainerEventResponse) {
	if !g.opts.Wanted(uid) {
		return
	}
	receivedAt := time.Now()
	ps, err := g.opts.Runtime.GeneratePodStatus(ctx, ev)
	if err != nil {
		logctx.From(ctx).Debug("cannot build pod status from event", zap.String("podUID", string(uid)), zap.Error(err))
		g.opts.Cache.Invalidate(uid, receivedAt)
		return
	}
	g.opts.Cache.SetFromEvent(uid, ps, time.Unix(0, ev.GetCreatedAt()), receivedAt)
}
