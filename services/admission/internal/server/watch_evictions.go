package server

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	"go.uber.org/zap"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/services/admission/eviction"
)

// errDraining ends watch streams when the service shuts down; Unavailable
// tells a watcher to reconnect.
var errDraining = connect.NewError(connect.CodeUnavailable, errors.New("admission service is shutting down"))

// WatchEvictions implements AdmissionServiceHandler: every eviction the
// eviction manager decides from now on, and every node-level reclaim it
// asks for (answered with ReportReclaim), until the client goes away or the
// service drains. Each stream has its own subscription, so a slow watcher
// loses only its own evictions (the manager logs them, and evicts again
// while the pressure lasts).
func (s *Service) WatchEvictions(ctx context.Context, _ *connect.Request[admissionv1.WatchEvictionsRequest], stream *connect.ServerStream[admissionv1.WatchEvictionsResponse]) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Subscribe before sending the response headers, so a client that has
	// seen the headers knows no later eviction can pass it by.
	var evictions <-chan eviction.Eviction
	var reclaims <-chan eviction.ReclaimRequest
	if s.evictions != nil {
		evictions = s.evictions.Subscribe(ctx)
		reclaims = s.evictions.SubscribeReclaims(ctx)
	}
	// Send the response headers now: clients wait for them before the
	// call returns, and evictions may not come for hours.
	if err := stream.Send(nil); err != nil {
		return nil
	}
	if evictions == nil {
		// No eviction manager: nothing will ever be evicted, but the
		// watcher should not see an error or a closed stream it would
		// reconnect to in a loop.
		select {
		case <-ctx.Done():
			return nil
		case <-s.draining:
			return errDraining
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.draining:
			return errDraining
		case ev, ok := <-evictions:
			if !ok {
				return nil
			}
			if err := stream.Send(evictionResponse(ev)); err != nil {
				s.log.Info("eviction watcher went away", zap.Error(err))
				return nil
			}
		case req, ok := <-reclaims:
			if !ok {
				return nil
			}
			if err := stream.Send(reclaimResponse(req)); err != nil {
				s.log.Info("eviction watcher went away", zap.Error(err))
				return nil
			}
		}
	}
}

func evictionResponse(ev eviction.Eviction) *admissionv1.WatchEvictionsResponse {
	out := &admissionv1.WatchEvictionsResponse{
		Reason:  ev.Reason,
		Message: ev.Message,
		Signal:  string(ev.Signal),
	}
	if ev.Pod != nil {
		out.Pod = podRef(ev.Pod)
	}
	// The manager always decides a grace period: 1s for a hard threshold,
	// the configured maximum for a soft one (the kubelet's evictPod).
	grace := ev.GracePeriodOverride
	out.GracePeriodSeconds = &grace
	return out
}

// reclaimResponse carries a reclaim request in the reclaim field, with no
// pod: a watcher that does not know the field skips the message, and the
// manager, unanswered, evicts after its wait.
func reclaimResponse(req eviction.ReclaimRequest) *admissionv1.WatchEvictionsResponse {
	return &admissionv1.WatchEvictionsResponse{Reclaim: &admissionv1.ReclaimRequest{
		Id:         req.ID,
		Signal:     string(req.Signal),
		Containers: req.Containers,
		Images:     req.Images,
	}}
}
