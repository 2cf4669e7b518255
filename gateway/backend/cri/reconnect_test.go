package cri

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestReconnectsAsTheKubelet: when the runtime goes away (containerd
// restarting), the backend dials it again on the kubelet's CRI client
// schedule (criclient.ConnectParams: 100 ms first, ×1.6, at most 3 s
// apart), not on gRPC's default one (1 s first, growing to 2 minutes),
// which left the gateway up to minutes behind a runtime that was back after
// a long restart. Within 2.5 s of the runtime going away the kubelet's
// schedule makes at least 5 attempts; gRPC's default makes 3.
func TestReconnectsAsTheKubelet(t *testing.T) {
	dir, err := os.MkdirTemp("", "cri")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "up.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(gs, &upstream{})
	go gs.Serve(ln)
	t.Cleanup(gs.Stop)

	var dials atomic.Int64
	dialer := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, "unix", strings.TrimPrefix(addr, "unix://"))
	})
	rt, err := New(context.Background(), "unix://"+path, Options{ConnectTimeout: 5 * time.Second, DialOptions: []grpc.DialOption{dialer}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { rt.Close() })

	gs.Stop() // the runtime goes away; its socket with it
	base := dials.Load()
	deadline := time.Now().Add(2500 * time.Millisecond)
	// Calls keep coming, as sync's relist does; each fails fast while the
	// connection is down.
	for dials.Load()-base < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("%d dial attempts in the 2.5 s after the runtime went away, want at least 5 (the kubelet's reconnect back-off)", dials.Load()-base)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, _ = rt.Version(ctx, &runtimeapi.VersionRequest{})
		cancel()
	}
}
