package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
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
	"github.com/splitlet/splitlet/internal/procmain"
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

// client is a connection's RuntimeService and ImageService clients.
type client struct {
	runtimeapi.RuntimeServiceClient
	runtimeapi.ImageServiceClient
}

func dial(b *testing.B, path string) client {
	b.Helper()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return client{runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)}
}

// plainServer serves rt on a unix socket with no interceptors: the baseline.
func plainServer(b *testing.B, rt backend.Runtime) client {
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
// default deadline, default policy, metrics (registry only, no HTTP), the
// streaming proxy on a loopback port.
func gatewayServer(b *testing.B, rt backend.Runtime) client {
	b.Helper()
	path := socketPath(b)
	srv, err := server.New(server.Config{
		SocketPath:     path,
		DefaultTimeout: server.DefaultRequestTimeout,
		Policy:         policy.DefaultConfig(),
		StreamingAddr:  "127.0.0.1:0",
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
// the cri backend, three ways:
//
//	direct           the client talks to containerd's socket
//	gateway          the gateway's server runs in the benchmark's process
//	gateway-process  the gateway runs as a process of its own (this test
//	                 binary re-executed, see TestMain), as in production,
//	                 where its goroutines do not share a Go runtime with
//	                 the client's
//
// The in-process gateway also reports backend-p50-ns, the median of its cri
// backend's call to containerd: p50-ns minus it is the gateway's own hop.
// Version and ListPodSandbox need no fixture in containerd.
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
	timed := &timedRuntime{Runtime: rt}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	clients := []struct {
		name  string
		c     runtimeapi.RuntimeServiceClient
		timed *timedRuntime // the backend calls to report, or nil
	}{
		{"direct", runtimeapi.NewRuntimeServiceClient(conn), nil},
		{"gateway", gatewayServer(b, timed), timed},
		{"gateway-process", gatewayProcess(b, endpoint), nil},
	}
	calls := []struct {
		name string
		call func(runtimeapi.RuntimeServiceClient) error
	}{
		{"Version", func(c runtimeapi.RuntimeServiceClient) error {
			_, err := c.Version(ctx, &runtimeapi.VersionRequest{})
			return err
		}},
		{"ListPodSandbox", func(c runtimeapi.RuntimeServiceClient) error {
			_, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
			return err
		}},
	}
	// Each call runs against every client in turn, so the three figures of a
	// call are taken close together under the same machine load.
	for _, call := range calls {
		for _, cl := range clients {
			b.Run(call.name+"/"+cl.name, func(b *testing.B) {
				if cl.timed != nil {
					cl.timed.reset()
				}
				Measure(b, func() error { return call.call(cl.c) })
				if cl.timed != nil {
					cl.timed.report(b)
				}
			})
		}
	}
}

// timedRuntime is the cri backend with the duration of its Version and
// ListPodSandbox calls to the runtime recorded.
type timedRuntime struct {
	*cri.Runtime
	mu  sync.Mutex
	lat Latencies
}

func (t *timedRuntime) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	defer t.record(time.Now())
	return t.Runtime.Version(ctx, req)
}

func (t *timedRuntime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	defer t.record(time.Now())
	return t.Runtime.ListPodSandbox(ctx, req)
}

func (t *timedRuntime) record(start time.Time) {
	d := time.Since(start)
	t.mu.Lock()
	t.lat = append(t.lat, d)
	t.mu.Unlock()
}

func (t *timedRuntime) reset() {
	t.mu.Lock()
	t.lat = t.lat[:0]
	t.mu.Unlock()
}

// report adds backend-p50-ns, the median backend call, to b's results.
func (t *timedRuntime) report(b *testing.B) {
	t.mu.Lock()
	s := slices.Clone(t.lat)
	t.mu.Unlock()
	if len(s) == 0 {
		return
	}
	slices.Sort(s)
	b.ReportMetric(float64(percentile(s, 50)), "backend-p50-ns")
}

// childEnv names, in a re-executed test binary, the runtime endpoint and the
// socket of the gateway it is to run instead of tests (see TestMain).
const (
	childEndpointEnv = "SPLITLET_BENCH_GATEWAY_ENDPOINT"
	childSocketEnv   = "SPLITLET_BENCH_GATEWAY_SOCKET"
)

// TestMain runs a gateway with the cri backend instead of the tests when the
// binary was re-executed by gatewayProcess, and a bare server when by
// roundTripServer.
func TestMain(m *testing.M) {
	if socket := os.Getenv(childRoundTripEnv); socket != "" {
		if err := runRoundTripChild(socket); err != nil {
			fmt.Fprintln(os.Stderr, "round-trip server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if endpoint := os.Getenv(childEndpointEnv); endpoint != "" {
		if err := runGatewayChild(endpoint, os.Getenv(childSocketEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "gateway child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runGatewayChild serves the gateway, configured as gatewayServer does and
// with the Go runtime's settings of splitlet-gateway (server.Process), until
// its standard input closes: the parent holds the other end, so the child
// also ends if the benchmark dies.
func runGatewayChild(endpoint, socket string) error {
	procmain.ApplyRuntimeDefaults(server.Process)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt, err := cri.New(ctx, endpoint, cri.Options{ConnectTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer rt.Close()
	srv, err := server.New(server.Config{
		SocketPath:     socket,
		DefaultTimeout: server.DefaultRequestTimeout,
		Policy:         policy.DefaultConfig(),
	}, rt)
	if err != nil {
		return err
	}
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	fmt.Println("ready") // the socket exists once server.New returns
	return srv.Serve(ctx)
}

// gatewayProcess starts the gateway in front of endpoint as a child process
// and returns a client of its socket.
func gatewayProcess(b *testing.B, endpoint string) client {
	b.Helper()
	path := socketPath(b)
	env := []string{childEndpointEnv + "=" + endpoint, childSocketEnv + "=" + path}
	// SPLITLET_BENCH_GATEWAY_GOMAXPROCS and _GOGC tune the child's Go
	// runtime alone (over server.Process's defaults), to compare settings
	// for the gateway process without changing the client's.
	for _, v := range []string{"GOMAXPROCS", "GOGC"} {
		if val := os.Getenv("SPLITLET_BENCH_GATEWAY_" + v); val != "" {
			env = append(env, v+"="+val)
		}
	}
	startChild(b, "gateway child", env...)
	return dial(b, path)
}

// startChild re-executes this test binary with env added, as a child that
// serves until its standard input closes (TestMain), waits for the "ready"
// line it prints once its socket exists, and returns its pid. Cleanup
// closes its standard input, so it stops gracefully, and kills it if it
// has not after 15 s.
func startChild(b *testing.B, what string, env ...string) int {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		b.Fatalf("%s did not start (%q, %v)", what, line, err)
	}
	return cmd.Process.Pid
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
