package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// GRPC asks the grpc.health.v1 Health service at host:port about
// service. Matches the kubelet's grpcprobe Probe, messages included: the
// connection must become ready within timeout (the kubelet dials with
// WithBlock, so a refused port is retried until the timeout), then Check
// must answer SERVING within what is left of it.
func GRPC(ctx context.Context, host, service string, port int, timeout time.Duration) (Result, string, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := grpc.NewClient(addr,
		grpc.WithUserAgent(UserAgent("probe")),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return Dialer(0).DialContext(ctx, "tcp", addr)
		}),
	)
	if err != nil {
		return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer conn.Close()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := waitReady(ctx, conn); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Failure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err), nil
		}
		return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}

	resp, err := healthpb.NewHealthClient(conn).Check(metadata.NewOutgoingContext(ctx, make(metadata.MD)),
		&healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if st, ok := status.FromError(err); ok {
			switch st.Code() {
			case codes.Unimplemented:
				return Failure, fmt.Sprintf("this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message()), nil
			case codes.DeadlineExceeded:
				return Failure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
			}
		}
		return Failure, fmt.Sprintf("error: health rpc probe failed: %+v", err), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return Success, "service healthy", nil
}

// waitReady blocks until conn is ready or ctx ends, which is what dialing
// with grpc.WithBlock did before grpc deprecated it.
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
}
