package probe

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// closedPort returns a port on 127.0.0.1 that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	tests := []struct {
		desc       string
		port       int
		wantResult Result
		wantOutput string
	}{
		{desc: "an open port succeeds", port: l.Addr().(*net.TCPAddr).Port, wantResult: Success},
		{desc: "a closed port fails with the dial error", port: closedPort(t), wantResult: Failure, wantOutput: "connection refused"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			res, out, err := TCP("127.0.0.1", tc.port, time.Second)
			if err != nil || res != tc.wantResult || !strings.Contains(out, tc.wantOutput) {
				t.Fatalf("TCP = (%q, %q, %v), want (%q, containing %q, nil)", res, out, err, tc.wantResult, tc.wantOutput)
			}
		})
	}
}

// startGRPC serves the health service (if hs is non-nil) on 127.0.0.1.
func startGRPC(t *testing.T, hs *health.Server) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	if hs != nil {
		healthpb.RegisterHealthServer(s, hs)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().(*net.TCPAddr).Port
}

func TestGRPC(t *testing.T) {
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	port := startGRPC(t, hs)
	bare := startGRPC(t, nil)
	closed := closedPort(t)

	tests := []struct {
		desc       string
		port       int
		service    string
		timeout    time.Duration
		wantResult Result
		wantOutput string // prefix
	}{
		{desc: "serving succeeds", port: port, wantResult: Success, wantOutput: "service healthy"},
		{desc: "not serving fails", port: port, service: "db", wantResult: Failure,
			wantOutput: `service unhealthy (responded with "NOT_SERVING")`},
		{desc: "an unknown service fails with the rpc error", port: port, service: "nope", wantResult: Failure,
			wantOutput: "error: health rpc probe failed: rpc error: code = NotFound"},
		{desc: "a server without the health service", port: bare, wantResult: Failure,
			wantOutput: "this server does not implement the grpc health protocol (grpc.health.v1.Health): "},
		{desc: "nothing listening times out connecting", port: closed, timeout: 200 * time.Millisecond, wantResult: Failure,
			wantOutput: `timeout: failed to connect service "127.0.0.1:`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 2 * time.Second
			}
			res, out, err := GRPC(context.Background(), "127.0.0.1", tc.service, tc.port, timeout)
			if err != nil || res != tc.wantResult || !strings.HasPrefix(out, tc.wantOutput) {
				t.Fatalf("GRPC = (%q, %q, %v), want (%q, prefix %q)", res, out, err, tc.wantResult, tc.wantOutput)
			}
		})
	}
}
