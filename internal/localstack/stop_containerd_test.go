package localstack

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/stack"
)

// TestStopLeavesNothingInContainerd is `make run RUNTIME_ENDPOINT=...
// RUN_DETACH=1` then `make stop` on a real containerd: after the stop, the
// runtime holds no sandbox or container of the example pods, and no mount
// names one of them (rootfs, shm). hack/e2e.sh runs it on its containerd
// after the other end-to-end suites, alone: a second stack's sync on the
// same containerd would remove this one's pods as unknown.
func TestStopLeavesNothingInContainerd(t *testing.T) {
	endpoint := os.Getenv(stack.EnvContainerd)
	if endpoint == "" {
		t.Skipf("%s not set: this test needs a real containerd (make e2e starts one)", stack.EnvContainerd)
	}
	ctx := context.Background()
	bin, cleanup, err := stack.Binaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	cri := runtimeapi.NewRuntimeServiceClient(conn)
	// What other suites left on this containerd is not this test's.
	pre := runtimeIDs(t, cri, nil)

	_, file, _, _ := runtime.Caller(0)
	cfg := Config{
		BinDir:          bin,
		Dir:             filepath.Join(t.TempDir(), "run"),
		ExamplesDir:     filepath.Join(filepath.Dir(file), "..", "..", "examples"),
		RuntimeEndpoint: endpoint,
		NodeName:        "stop-test",
		Timeout:         2 * time.Minute,
		Detach:          true,
		Out:             io.Discard,
		Logger:          zaptest.NewLogger(t),
	}
	if err := Run(ctx, cfg); err != nil {
		t.Fatalf("make run: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = Stop(cfg)
		}
	})
	before := runtimeIDs(t, cri, pre)
	if len(before) == 0 {
		t.Fatal("containerd holds nothing while the example pods run: the stack did not use it")
	}

	if err := Stop(cfg); err != nil {
		t.Fatalf("make stop: %v", err)
	}
	stopped = true
	if left := runtimeIDs(t, cri, pre); len(left) > 0 {
		t.Errorf("after make stop containerd still holds %d sandboxes and containers: %v", len(left), left)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		for id, what := range before {
			if strings.Contains(line, id) {
				t.Errorf("after make stop a mount of %s is left: %s", what, line)
			}
		}
	}
	t.Logf("make stop removed %d sandboxes and containers and their mounts", len(before))
}

// runtimeIDs maps the ID of every sandbox and container the runtime holds,
// but those in except, to a description of it.
func runtimeIDs(t *testing.T, cri runtimeapi.RuntimeServiceClient, except map[string]string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sbs, err := cri.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ctrs, err := cri.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, sb := range sbs.GetItems() {
		ids[sb.GetId()] = "sandbox of " + sb.GetMetadata().GetNamespace() + "/" + sb.GetMetadata().GetName() + " (" + sb.GetState().String() + ")"
	}
	for _, c := range ctrs.GetContainers() {
		ids[c.GetId()] = "container " + c.GetMetadata().GetName() + " (" + c.GetState().String() + ")"
	}
	for id := range except {
		delete(ids, id)
	}
	return ids
}
