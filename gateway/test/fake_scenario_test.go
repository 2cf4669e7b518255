package test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend/fake"
	"github.com/splitlet/splitlet/gateway/internal/scenario"
	"github.com/splitlet/splitlet/gateway/policy"
	"github.com/splitlet/splitlet/gateway/server"
)

// TestFakeScenario runs the shared CRI scenario through the gateway server
// in front of the fake backend: the same steps and assertions the e2e test
// runs against containerd, so the fake's CRI state rules are held to the
// real runtime's.
func TestFakeScenario(t *testing.T) {
	// The checkpoint archive goes where the gateway's policy allows.
	checkpoints := t.TempDir()
	sock := startGateway(t, checkpoints)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial gateway: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })

	scenario.Run(t, scenario.Env{
		Runtime: runtimeapi.NewRuntimeServiceClient(conn),
		Image:   runtimeapi.NewImageServiceClient(conn),
		// The fake starts with no images: the scenario pulls it.
		BusyboxImage: "docker.io/library/busybox:1.36",
		// The fake runs in this process and writes the log file here.
		LogDir:        t.TempDir(),
		CheckpointDir: checkpoints,
		Timeout:       10 * time.Second,
	})
}

// startGateway serves a fresh fake runtime on a temporary unix socket until
// the test ends, and checks the server shut down cleanly. The policy is the
// default one, allowing hostPaths under allowed too.
func startGateway(t *testing.T, allowed ...string) string {
	t.Helper()
	// Not t.TempDir: unix socket paths are limited to 108 bytes and test
	// names make t.TempDir paths long.
	dir, err := os.MkdirTemp("", "sg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "gw.sock")

	rt := fake.New(fake.Options{})
	t.Cleanup(func() { _ = rt.Close() })
	// The default policy allows host network, which the scenario's pod uses.
	pol := policy.DefaultConfig()
	pol.AllowedHostPathPrefixes = append(pol.AllowedHostPathPrefixes, allowed...)
	srv, err := server.New(server.Config{SocketPath: sock, Policy: pol}, rt)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("gateway Serve returned %v after shutdown, want nil", err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("gateway did not shut down within 15s")
			_ = srv.Close()
		}
	})
	return sock
}
