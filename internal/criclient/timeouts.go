// Package criclient holds what splitlet's processes put between themselves
// and the runtime's CRI connection: the kubelet's per-call deadlines and
// reconnect back-off.
package criclient

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultRequestTimeout is the kubelet's --runtime-request-timeout default.
const DefaultRequestTimeout = 2 * time.Minute

// Timeouts returns a unary client interceptor that bounds each CRI call by
// CallTimeout, so that a runtime stuck in one call fails that call instead
// of holding its caller (a pod worker, the eviction loop) for ever. A
// caller's earlier deadline still wins. base <= 0 disables the bound.
func Timeouts(base time.Duration) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if base > 0 {
			req = raiseCheckpointTimeout(req, base)
			if d, ok := CallTimeout(req, base); ok {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, d)
				defer cancel()
			}
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// CallTimeout is the deadline a CRI request gets from the request timeout
// d, or false when it must get none. It follows the kubelet's CRI client
// (k8s.io/cri-client remoteRuntimeService / remoteImageService), which knows
// that some requests carry their own time budget:
//   - RunPodSandbox: twice d (networking and image unpacking are slow), as
//     remoteRuntimeService.RunPodSandbox does.
//   - StopContainer waits up to its grace period: d plus that timeout, as
//     remoteRuntimeService.StopContainer does.
//   - ExecSync has its own timeout: d plus it, or no deadline when it is 0
//     (no timeout), as remoteRuntimeService.ExecSync does.
//   - PullImage may take as long as the registry needs: no deadline, as
//     remoteImageService.PullImage uses a plain cancellable context.
//   - CheckpointContainer gets its own timeout when that is longer than d,
//     else d, as remoteRuntimeService.CheckpointContainer does.
func CallTimeout(req any, d time.Duration) (time.Duration, bool) {
	switch r := req.(type) {
	case *runtimeapi.RunPodSandboxRequest:
		return 2 * d, true
	case *runtimeapi.StopContainerRequest:
		return d + time.Duration(r.GetTimeout())*time.Second, true
	case *runtimeapi.ExecSyncRequest:
		if r.GetTimeout() == 0 {
			return 0, false
		}
		return d + time.Duration(r.GetTimeout())*time.Second, true
	case *runtimeapi.PullImageRequest:
		return 0, false
	case *runtimeapi.CheckpointContainerRequest:
		if t := time.Duration(r.GetTimeout()) * time.Second; t > d {
			return t, true
		}
	}
	return d, true
}

// raiseCheckpointTimeout returns a CheckpointContainer request whose
// timeout (what the runtime gives CRIU) is at least the request timeout
// base, as remoteRuntimeService.CheckpointContainer raises a shorter one;
// the caller's request is left as it is. Other requests are returned as
// they are.
func raiseCheckpointTimeout(req any, base time.Duration) any {
	r, ok := req.(*runtimeapi.CheckpointContainerRequest)
	if !ok {
		return req
	}
	if secs := int64(base / time.Second); r.GetTimeout() < secs {
		r = proto.CloneOf(r)
		r.Timeout = secs
	}
	return r
}
