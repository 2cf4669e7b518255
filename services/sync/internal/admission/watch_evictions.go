package admission

import (
	"context"
	"errors"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/logctx"
	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/services/sync/internal/syncloop"
)

// WatchEvictions follows the AdmissionService's eviction stream until ctx
// ends, handing each eviction to evictor and running each node-level
// reclaim request with gc, whose outcome it reports with ReportReclaim
// (reclaim.go). When the stream cannot be opened
// or breaks (admission restarted, drained, unreachable), it reconnects after
// a back-off that doubles up to Options.RetryMax and starts over once a
// stream has been open for a while. Evictions decided while no stream was
// open are not replayed: the eviction manager evicts again while the
// pressure lasts.
func (c *Client) WatchEvictions(ctx context.Context, evictor syncloop.Evictor, gc NodeGC) {
	log := logctx.From(ctx).With(zap.String("admission", c.endpoint))
	reclaims := &reclaimer{c: c, gc: gc}
	defer reclaims.wait()
	delay := c.opts.RetryInitial
	for ctx.Err() == nil {
		start := time.Now()
		err := c.watchOnce(ctx, evictor, reclaims)
		if ctx.Err() != nil {
			return
		}
		// A stream that stayed up well beyond the back-off was healthy;
		// its end starts the back-off over.
		if time.Since(start) > c.opts.RetryMax {
			delay = c.opts.RetryInitial
		}
		log.Info("eviction watch ended; reconnecting", zap.Duration("after", delay), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, c.opts.RetryMax)
	}
}

// errStreamClosed is a stream the server ended without an error.
var errStreamClosed = errors.New("eviction stream closed by admission")

// watchOnce runs one stream until it ends.
func (c *Client) watchOnce(ctx context.Context, evictor syncloop.Evictor, reclaims *reclaimer) error {
	log := logctx.From(ctx)
	stream, err := c.svc.WatchEvictions(ctx, connect.NewRequest(&admissionv1.WatchEvictionsRequest{}))
	if err != nil {
		return err
	}
	defer stream.Close()
	log.Debug("watching evictions", zap.String("admission", c.endpoint))
	for stream.Receive() {
		ev := stream.Msg()
		if req := ev.GetReclaim(); req != nil {
			reclaims.start(ctx, req)
			continue
		}
		if ev.GetPod() == nil {
			continue // a kind of message newer than this sync
		}
		ref := podRef(ev.GetPod())
		var grace *int64
		if ev.GracePeriodSeconds != nil {
			g := ev.GetGracePeriodSeconds()
			grace = &g
		}
		reason := ev.GetReason()
		if reason == "" {
			reason = syncloop.ReasonEvicted
		}
		if err := evictor.EvictPod(ctx, ref, reason, ev.GetMessage(), grace); err != nil {
			log.Warn("eviction not carried out", zap.String("pod", ref.Namespace+"/"+ref.Name),
				zap.String("signal", ev.GetSignal()), zap.Error(err))
		}
	}
	if err := stream.Err(); err != nil {
		return err
	}
	return errStreamClosed
}
