package client

import (
	"context"
	"errors"
	"io"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/logctx"
	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

// DefaultRetryTimeout is how long a call keeps being retried while the
// server is away: long enough to ride out a restart of splitlet-sync (about
// a second), short enough that a server that is not running at all is
// reported quickly.
const DefaultRetryTimeout = 5 * time.Second

// idempotent are the unary calls that may be sent again after one that may
// have reached the server: applying the same manifest twice changes
// nothing, reads change nothing, and deleting a pod twice deletes it once.
// ExecSync is not among them: it would run the command again; it is retried
// only when the connection was never made.
var idempotent = map[string]bool{
	podv1connect.PodServiceApplyProcedure:  true,
	podv1connect.PodServiceDeleteProcedure: true,
	podv1connect.PodServiceGetProcedure:    true,
	podv1connect.PodServiceListProcedure:   true,
	podv1connect.PodServiceEventsProcedure: true,
}

// retryInterceptor sends a unary call again while the server is away (sync
// restarting): a refused connection for any call, and a connection lost
// mid-call (reset, EOF, Unavailable) for idempotent ones, with back-off,
// until timeout. A Delete retried after a lost connection that then finds
// the pod gone succeeds: the lost attempt deleted it.
type retryInterceptor struct {
	timeout time.Duration
	sleep   func(context.Context, time.Duration) error
}

var _ connect.Interceptor = (*retryInterceptor)(nil)

func (r *retryInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		procedure := req.Spec().Procedure
		deadline := time.Now().Add(r.timeout)
		delay := 100 * time.Millisecond
		reached := false // an earlier attempt may have reached the server
		for {
			resp, err := next(ctx, req)
			if err == nil || ctx.Err() != nil {
				return resp, err
			}
			if reached && procedure == podv1connect.PodServiceDeleteProcedure && connect.CodeOf(err) == connect.CodeNotFound {
				return connect.NewResponse(&podv1.DeleteResponse{}), nil
			}
			refused := isDialError(err)
			lost := !refused && lostConnection(err)
			if !(refused || lost && idempotent[procedure]) || time.Now().Add(delay).After(deadline) {
				return resp, err
			}
			reached = reached || lost
			logctx.From(ctx).Debug("server away; retrying", zap.String("procedure", procedure), zap.Duration("in", delay), zap.Error(err))
			if err := r.sleep(ctx, delay); err != nil {
				return nil, err
			}
			delay = min(2*delay, time.Second)
		}
	}
}

func (r *retryInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (r *retryInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// lostConnection reports a connection that broke during the call: the
// server went away after it may have read the request.
func lostConnection(err error) bool {
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	return connect.CodeOf(err) == connect.CodeUnavailable
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
