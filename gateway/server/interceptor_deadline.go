package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/splitlet/splitlet/internal/criclient"
)

// defaultDeadline is the deadline step of the unary chain (unaryChain): it
// reports the timeout a unary call gets when the caller set no deadline, so
// a wedged runtime cannot hold a caller forever, or false when the call
// keeps the deadline it has (a caller's own deadline always wins) or must
// get none.
func (s *Server) defaultDeadline(ctx context.Context, req any) (time.Duration, bool) {
	if s.cfg.DefaultTimeout <= 0 {
		return 0, false
	}
	if _, ok := ctx.Deadline(); ok {
		return 0, false
	}
	return criclient.CallTimeout(req, s.cfg.DefaultTimeout)
}

// errShuttingDown ends CRI streams when the gateway stops; Unavailable tells a
// watcher such as sync to reconnect (to the next gateway) rather than give up.
var errShuttingDown = fmt.Errorf("gateway is shutting down: %w", errdefs.ErrUnavailable)

// streamLifetime is the stream counterpart of defaultDeadline. Streams never get
// a default deadline (GetContainerEvents is meant to live as long as its
// client), but CRI streams end when the server shuts down so a graceful stop
// does not wait for watchers that never hang up. Health watches are left
// alone so they can observe NOT_SERVING.
func (s *Server) streamLifetime(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if info.FullMethod == "/"+healthpb.Health_ServiceDesc.ServiceName+"/Watch" {
		return handler(srv, ss)
	}
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	stop := context.AfterFunc(s.streamCtx, cancel)
	defer stop()
	err := handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
	// The backend may end a cancelled stream with nil, ctx.Err() or a
	// Canceled status; when the cause was our shutdown, say so.
	if s.streamCtx.Err() != nil && ss.Context().Err() == nil &&
		(err == nil || errors.Is(err, context.Canceled) || status.Code(err) == codes.Canceled) {
		return errShuttingDown
	}
	return err
}
