package podresources

import (
	"context"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The kubelet's limits of the pod-resources API
// (pkg/kubelet/apis/podresources/constants.go): a token bucket of
// DefaultBurstTokens refilled at DefaultQPS per second, shared by every
// caller.
const (
	DefaultQPS         = 100
	DefaultBurstTokens = 10
)

// errLimitExceeded is the kubelet's answer to a call over the limit
// (pkg/kubelet/apis/grpc/ratelimit.go).
var errLimitExceeded = status.Error(codes.ResourceExhausted, "rejected by rate limit")

// limiter is the part of rate.Limiter the interceptor uses.
type limiter interface {
	Allow() bool
}

var _ limiter = (*rate.Limiter)(nil)

func newLimiter() *rate.Limiter {
	return rate.NewLimiter(rate.Limit(DefaultQPS), DefaultBurstTokens)
}

// limitUnary refuses a call when l has no token left, before it reaches
// the server: the kubelet's LimiterUnaryServerInterceptor.
func limitUnary(l limiter) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !l.Allow() {
			return nil, errLimitExceeded
		}
		return handler(ctx, req)
	}
}
