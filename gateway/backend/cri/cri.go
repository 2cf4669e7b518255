// Package cri is the gateway backend that forwards every CRI call to a real
// CRI endpoint, such as containerd's socket.
//
// Requests and replies pass through verbatim; Forward (backend.Forwarder)
// passes them as their encoded bytes, which the gateway's server does for the
// calls it does not read (server/passthrough.go). The runtime's errors are
// returned untouched (they are gRPC status errors, which the gateway's server
// passes through), so a client of the gateway sees the runtime's own codes and
// messages. Server streams (GetContainerEvents, Stream*) are copied message by
// message until either side ends. Exec, Attach and PortForward return the
// runtime's streaming URL unchanged: the client then talks to the runtime's
// streaming server directly, as it would without the gateway.
//
// Usage:
//
//	rt, err := cri.New(ctx, "unix:///run/containerd/containerd.sock", cri.Options{})
//	if err != nil { ... }
//	defer rt.Close()
package cri

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend"
	"github.com/splitlet/splitlet/gateway/backend/passthrough"
	"github.com/splitlet/splitlet/internal/criclient"
)

// maxMsgSize is the kubelet's CRI client limit (16 MiB, pkg/kubelet
// maxMsgSize): ListContainers on a busy node exceeds gRPC's 4 MiB default.
const maxMsgSize = 16 << 20

// Receive windows of the connection to the runtime. Fixed windows turn off
// grpc-go's BDP estimator, which would otherwise PING the runtime after almost
// every small reply (a CRI reply never fills the 64 KiB starting window enough
// to settle the estimate): one more frame, write and wake-up per call on both
// sides. On a local socket a fixed window this large never limits throughput.
const (
	streamWindowSize = 4 << 20
	connWindowSize   = 16 << 20
)

// DefaultConnectTimeout bounds New's first Version call.
const DefaultConnectTimeout = 10 * time.Second

// Options tunes the connection to the runtime.
type Options struct {
	// ConnectTimeout bounds the Version call New makes to check the endpoint
	// answers CRI (default DefaultConnectTimeout; negative skips the check, so
	// the gateway can start before the runtime).
	ConnectTimeout time.Duration
	// DialOptions are added after the backend's own.
	DialOptions []grpc.DialOption
}

// Runtime forwards CRI to a runtime endpoint. It is safe for concurrent use.
type Runtime struct {
	// The Unimplemented servers are embedded only because the generated
	// interfaces require them; every RPC is forwarded below.
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	conn    *grpc.ClientConn
	runtime runtimeapi.RuntimeServiceClient
	images  runtimeapi.ImageServiceClient
}

var (
	_ backend.Runtime   = (*Runtime)(nil)
	_ backend.Forwarder = (*Runtime)(nil)
)

// New connects to endpoint, a unix socket path or unix:// URL, and checks that
// it answers CRI Version, as the kubelet's validateServiceConnection does. The
// check's failure wraps errdefs.ErrUnavailable.
func New(ctx context.Context, endpoint string, opts Options) (*Runtime, error) {
	target, err := dialTarget(endpoint)
	if err != nil {
		return nil, err
	}
	dialOpts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)),
		grpc.WithInitialWindowSize(streamWindowSize),
		grpc.WithInitialConnWindowSize(connWindowSize),
		// The kubelet's reconnect back-off: back within 3 s of a
		// runtime that restarted, not up to 2 minutes later.
		grpc.WithConnectParams(criclient.ConnectParams),
	}
	dialOpts = append(dialOpts, opts.DialOptions...)
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("cri backend: connect to %s: %w", endpoint, err)
	}
	r := &Runtime{
		conn:    conn,
		runtime: runtimeapi.NewRuntimeServiceClient(conn),
		images:  runtimeapi.NewImageServiceClient(conn),
	}
	timeout := opts.ConnectTimeout
	if timeout == 0 {
		timeout = DefaultConnectTimeout
	}
	if timeout > 0 {
		vctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		// WaitForReady rides out a runtime that is still starting up.
		if _, err := r.runtime.Version(vctx, &runtimeapi.VersionRequest{}, grpc.WaitForReady(true)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("cri backend: %s does not answer CRI Version: %w: %w", endpoint, errdefs.ErrUnavailable, err)
		}
	}
	return r, nil
}

// dialTarget turns a CRI endpoint into a gRPC target. Only unix sockets are
// accepted: the runtime's socket is local by nature, and a TCP runtime
// endpoint would bypass the point of the gateway owning it.
func dialTarget(endpoint string) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		if strings.TrimPrefix(endpoint, "unix://") == "" {
			break
		}
		return endpoint, nil
	case strings.HasPrefix(endpoint, "/"):
		return "unix://" + endpoint, nil
	}
	return "", fmt.Errorf("cri backend: endpoint %q is not a unix socket path or unix:// URL: %w", endpoint, errdefs.ErrInvalidArgument)
}

// Close closes the connection to the runtime.
func (r *Runtime) Close() error { return r.conn.Close() }

// forwardCodec sends a passthrough.Frame's bytes as they are.
var forwardCodec = grpc.ForceCodecV2(passthrough.Codec{})

// Forward makes the call fullMethod to the runtime with req's bytes as its
// request and puts the runtime's encoded reply in reply (backend.Forwarder).
func (r *Runtime) Forward(ctx context.Context, fullMethod string, req, reply *passthrough.Frame) error {
	return r.conn.Invoke(ctx, fullMethod, req, reply, forwardCodec)
}
