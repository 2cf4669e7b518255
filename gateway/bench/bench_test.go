package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend"
	"github.com/splitlet/splitlet/gateway/backend/cri"
	"github.com/splitlet/splitlet/gateway/backend/fake"
	"github.com/splitlet/splitlet/gateway/policy"
	"github.com/splitlet/splitlet/gateway/server"
)

const image = "docker.io/library/busybox:latest"

// fixture is a fake runtime holding one ready sandbox with n containers.
func fixture(b *testing.B, n int) (*fake.Runtime, string) {
	b.Helper()
	ctx := context.Background()
	rt := fake.New(fake.Options{})
	b.Cleanup(func() { rt.Close() })
	if err := rt.Preload(image); err != nil {
		b.Fatal(err)
	}
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "bench", Namespace: "default", Uid: "uid-bench"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
			PodSandboxId:  sb.GetPodSandboxId(),
			SandboxConfig: sbCfg,
			Config: &runtimeapi.ContainerConfig{
				Metadata: &runtimeapi.ContainerMetadata{Name: fmt.Sprintf("c%d", i)},
				Image:    &runtimeapi.ImageSpec{Image: image},
				Labels:   map[string]string{"io.kubernetes.container.name": fmt.Sprintf("c%d", i)},
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.GetContainerId()}); err != nil {
			b.Fatal(err)
		}
	}
	return rt, sb.GetPodSandboxId()
}

func socketPath(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp("", "sgb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "cri.sock")
}

func dial(b *testing.B, path string) runtimeapi.RuntimeServiceClient {
	b.Helper()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}

// plainServer serves rt on a unix socket with no interceptors: the baseline.
func plainServer(b *testing.B, rt backend.Runtime) runtimeapi.RuntimeServiceClient {
	b.Helper()
	path := socketPath(b)
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(16<<20), grpc.MaxSendMsgSize(16<<20))
	runtimeapi.RegisterRuntimeServiceServer(gs, rt)
	runtimeapi.RegisterImageServiceServer(gs, rt)
	go gs.Serve(ln)
	b.Cleanup(gs.Stop)
	return dial(b, path)
}

// gatewayServer serves rt through the gateway with its production defaults:
// default deadline, default policy, metrics (registry only, no HTTP).
func gatewayServer(b *testing.B, rt backend.Runtime) runtimeapi.RuntimeServiceClient {
	b.Helper()
	path := socketPath(b)
	srv, err := server.New(server.Config{
		SocketPath:     path,
		DefaultTimeout: server.DefaultRequestTimeout,
		Policy:         policy.DefaultConfig(),
	}, rt)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	return dial(b, path)
}

func BenchmarkPodSandboxStatus(b *testing.B) {
	ctx := context.Background()
	rt, id := fixture(b, 1)
	req := &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id}
	b.Run("direct", func(b *testing.B) {
		Measure(b, func() error { _, err := rt.PodSandboxStatus(ctx, req); return err })
	})
	b.Run("grpc", func(b *testing.B) {
		c := plainServer(b, rt)
		Measure(b, func() error { _, err := c.PodSandboxStatus(ctx, req); return err })
	})
	b.Run("gateway", func(b *testing.B) {
		c := gatewayServer(b, rt)
		Measure(b, func() error { _, err := c.PodSandboxStatus(ctx, req); return err })
	})
}

func BenchmarkListContainers100(b *testing.B) {
	ctx := context.Background()
	rt, _ := fixture(b, 100)
	req := &runtimeapi.ListContainersRequest{}
	check := func(r *runtimeapi.ListContainersResponse, err error) error {
		if err == nil && len(r.GetContainers()) != 100 {
			return fmt.Errorf("listed %d containers, want 100", len(r.GetContainers()))
		}
		return err
	}
	b.Run("direct", func(b *testing.B) {
		Measure(b, func() error { return check(rt.ListContainers(ctx, req)) })
	})
	b.Run("grpc", func(b *testing.B) {
		c := plainServer(b, rt)
		Measure(b, func() error { return check(c.ListContainers(ctx, req)) })
	})
	b.Run("gateway", func(b *testing.B) {
		c := gatewayServer(b, rt)
		Measure(b, func() error { return check(c.ListContainers(ctx, req)) })
	})
}

// BenchmarkContainerd measures the gateway in front of a real containerd:
// a client of containerd's own socket against a client of the gateway with
// the cri backend. Version and ListPodSandbox need no fixture in containerd.
func BenchmarkContainerd(b *testing.B) {
	endpoint := os.Getenv("SPLITLET_CONTAINERD_ENDPOINT")
	if endpoint == "" {
		b.Skip("SPLITLET_CONTAINERD_ENDPOINT not set: point it at a running containerd's CRI socket (unix:///path) to compare it with the gateway")
	}
	ctx := context.Background()
	rt, err := cri.New(ctx, endpoint, cri.Options{ConnectTimeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	clients := []struct {
		name string
		c    runtimeapi.RuntimeServiceClient
	}{
		{"direct", runtimeapi.NewRuntimeServiceClient(conn)},
		{"gateway", gatewayServer(b, rt)},
	}
	for _, cl := range clients {
		b.Run("Version/"+cl.name, func(b *testing.B) {
			Measure(b, func() error { _, err := cl.c.Version(ctx, &runtimeapi.VersionRequest{}); return err })
		})
		b.Run("ListPodSandbox/"+cl.name, func(b *testing.B) {
			Measure(b, func() error { _, err := cl.c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); return err })
		})
	}
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		desc string
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{desc: "median of 1..100", in: seq(100), p: 50, want: 50},
		{desc: "p99 of 1..100", in: seq(100), p: 99, want: 99},
		{desc: "p99 of 1..1000", in: seq(1000), p: 99, want: 990},
		{desc: "single value", in: seq(1), p: 99, want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := percentile(tc.in, tc.p); got != tc.want {
				t.Errorf("percentile(p%d) = %d, want %d", tc.p, got, tc.want)
			}
		})
	}
}

func seq(n int) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = time.Duration(i + 1)
	}
	return s
}
