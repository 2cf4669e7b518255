package e2e

import (
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/internal/scenario"
)

const defaultBusyboxImage = "docker.io/library/busybox:1.36"

// TestContainerdScenario runs the CRI scenario against a real containerd,
// first through the gateway (the point of the test), then directly, which
// shows that the gateway in between changes nothing a client can see.
func TestContainerdScenario(t *testing.T) {
	gateway := os.Getenv("SPLITLET_GATEWAY_ENDPOINT")
	if gateway == "" {
		t.Skip("SPLITLET_GATEWAY_ENDPOINT not set: run `make e2e`, which starts containerd and the gateway")
	}
	image := os.Getenv("SPLITLET_BUSYBOX_IMAGE")
	if image == "" {
		image = defaultBusyboxImage
	}

	t.Run("through-gateway", func(t *testing.T) {
		// The gateway's policy allows checkpoints under
		// /var/lib/splitlet only (TestMain).
		if err := os.MkdirAll("/var/lib/splitlet", 0o755); err != nil {
			t.Fatal(err)
		}
		checkpoints, err := os.MkdirTemp("/var/lib/splitlet", "gateway-e2e-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(checkpoints) })
		runScenario(t, gateway, image, checkpoints)
	})
	t.Run("direct-to-containerd", func(t *testing.T) {
		endpoint := os.Getenv("SPLITLET_CONTAINERD_ENDPOINT")
		if endpoint == "" {
			t.Skip("SPLITLET_CONTAINERD_ENDPOINT not set: no containerd socket to compare against")
		}
		runScenario(t, endpoint, image, "")
	})
}

// runScenario dials a CRI endpoint and runs the shared scenario over it;
// checkpointDir is where checkpoints go ("": the log directory).
func runScenario(t *testing.T, endpoint, image, checkpointDir string) {
	conn, err := grpc.NewClient(dialTarget(endpoint), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	t.Logf("CRI endpoint %s, image %s", endpoint, image)
	scenario.Run(t, scenario.Env{
		Runtime:      runtimeapi.NewRuntimeServiceClient(conn),
		Image:        runtimeapi.NewImageServiceClient(conn),
		BusyboxImage: image,
		// containerd writes the container log on this machine; the test
		// reads it back from the same directory.
		LogDir:        t.TempDir(),
		CheckpointDir: checkpointDir,
	})
}

// dialTarget accepts what crictl accepts for an endpoint, a unix:// URL or a
// bare socket path, and returns a gRPC target.
func dialTarget(endpoint string) string {
	if strings.Contains(endpoint, "://") {
		return endpoint
	}
	return "unix://" + endpoint
}
