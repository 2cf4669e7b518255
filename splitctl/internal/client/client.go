package client

import (
	"context"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

// New returns a PodService client for the server at baseURL, speaking the
// Connect protocol over HTTP (streams work over HTTP/1.1 too); server
// names it in errors (its unix:// socket, when httpClient dials one).
// Every error it returns has gone through convert. Unary calls are retried
// while the server is away for up to retryTimeout (retryInterceptor; 0
// never retries).
func New(server, baseURL string, httpClient *http.Client, retryTimeout time.Duration) podv1connect.PodServiceClient {
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	// The first interceptor is the outermost: errors are converted after
	// the retries, which see Connect's own.
	return podv1connect.NewPodServiceClient(httpClient, baseURL,
		connect.WithInterceptors(&errorInterceptor{server: server}, &retryInterceptor{timeout: retryTimeout, sleep: sleepCtx}))
}

// errorInterceptor converts errors at the boundary and logs each call at
// debug level, so commands only ever see StatusError or ConnectionError.
type errorInterceptor struct {
	server string
}

var _ connect.Interceptor = (*errorInterceptor)(nil)

func (i *errorInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		start := time.Now()
		resp, err := next(ctx, req)
		logctx.From(ctx).Debug("rpc", zap.String("procedure", req.Spec().Procedure),
			zap.Duration("took", time.Since(start)), zap.Error(err))
		if err != nil {
			return nil, convert(err, i.server, req.Any())
		}
		return resp, nil
	}
}

func (i *errorInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		logctx.From(ctx).Debug("stream", zap.String("procedure", spec.Procedure))
		return &convertingConn{StreamingClientConn: next(ctx, spec), server: i.server}
	}
}

func (i *errorInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// convertingConn remembers the request sent so that receive errors can name
// the pod.
type convertingConn struct {
	connect.StreamingClientConn
	server string
	req    any
}

func (c *convertingConn) Send(msg any) error {
	c.req = msg
	return convert(c.StreamingClientConn.Send(msg), c.server, msg)
}

func (c *convertingConn) Receive(msg any) error {
	return convert(c.StreamingClientConn.Receive(msg), c.server, c.req)
}
