package bench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend"
	"github.com/splitlet/splitlet/gateway/backend/cri"
	"github.com/splitlet/splitlet/gateway/backend/fake"
	"github.com/splitlet/splitlet/gateway/backend/passthrough"
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
//	gateway-process-decoded
//	                 the same, but the gateway decodes and re-encodes every
//	                 call (server.WithEveryCallDecoded) rather than
//	                 forwarding its bytes: what forwarding as bytes saves
//
// The gateway processes report gateway-cpu-µs/op, their CPU per call. The
// in-process gateway also reports backend-p50-ns, the median of its cri
// backend's call to containerd: p50-ns minus it is the gateway's own hop.
// Version and ListPodSandbox need no fixture in containerd; with
// SPLITLET_BENCH_CONTAINERD_SANDBOXES=N, N sandboxes are run first
// (containerdSandboxes), ListPodSandbox lists them, and PodSandboxStatus of
// one is measured too.
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
	gw, gwPid := gatewayProcess(b, endpoint, false)
	decoding, decodingPid := gatewayProcess(b, endpoint, true)
	clients := []struct {
		name  string
		c     runtimeapi.RuntimeServiceClient
		timed *timedRuntime // the backend calls to report, or nil
		pid   int           // the gateway process, whose CPU to report, or 0
	}{
		{"direct", runtimeapi.NewRuntimeServiceClient(conn), nil, 0},
		{"gateway", gatewayServer(b, timed), timed, 0},
		{"gateway-process", gw, nil, gwPid},
		{"gateway-process-decoded", decoding, nil, decodingPid},
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
	if ids := containerdSandboxes(b, runtimeapi.NewRuntimeServiceClient(conn)); len(ids) > 0 {
		calls = append(calls, struct {
			name string
			call func(runtimeapi.RuntimeServiceClient) error
		}{"PodSandboxStatus", func(c runtimeapi.RuntimeServiceClient) error {
			_, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: ids[0]})
			return err
		}})
	}
	// Each call runs against every client in turn, so the three figures of a
	// call are taken close together under the same machine load.
	for _, call := range calls {
		for _, cl := range clients {
			b.Run(call.name+"/"+cl.name, func(b *testing.B) {
				if cl.timed != nil {
					cl.timed.reset()
				}
				var cpu0 time.Duration
				if cl.pid != 0 {
					cpu0 = processCPU(b, cl.pid)
				}
				Measure(b, func() error { return call.call(cl.c) })
				if cl.timed != nil {
					cl.timed.report(b)
				}
				if cl.pid != 0 {
					cpu := processCPU(b, cl.pid) - cpu0
					b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "gateway-cpu-µs/op")
				}
			})
		}
	}
}

// timedRuntime is the cri backend with the duration of the calls it
// forwards as bytes (all of BenchmarkContainerd's) recorded.
type timedRuntime struct {
	*cri.Runtime
	mu  sync.Mutex
	lat Latencies
}

func (t *timedRuntime) Forward(ctx context.Context, fullMethod string, req, reply *passthrough.Frame) error {
	defer t.record(time.Now())
	return t.Runtime.Forward(ctx, fullMethod, req, reply)
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
	// childDecodeAllEnv set, the child decodes every call
	// (server.WithEveryCallDecoded), as the gateway did before forwarding
	// calls as bytes.
	childDecodeAllEnv = "SPLITLET_BENCH_GATEWAY_DECODE_ALL"
)

// containerdSandboxes runs SPLITLET_BENCH_CONTAINERD_SANDBOXES (default
// none) host-network sandboxes in containerd, so that ListPodSandbox answers
// with that many and PodSandboxStatus has one to describe, and returns their
// IDs; cleanup stops and removes them. Each costs a pause container, so the
// runtime needs its pause image (hack/bench.sh imports it).
func containerdSandboxes(b *testing.B, rt runtimeapi.RuntimeServiceClient) []string {
	b.Helper()
	n, err := strconv.Atoi(cmp.Or(os.Getenv("SPLITLET_BENCH_CONTAINERD_SANDBOXES"), "0"))
	if err != nil {
		b.Fatalf("SPLITLET_BENCH_CONTAINERD_SANDBOXES: %v", err)
	}
	ctx := context.Background()
	ids := make([]string, 0, n)
	b.Cleanup(func() {
		for _, id := range ids {
			rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
			rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
		}
	})
	for i := range n {
		name := fmt.Sprintf("bench-%d", i)
		resp, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "bench", Uid: "uid-" + name},
			Labels:   map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "bench"},
			Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
		}})
		if err != nil {
			b.Fatalf("sandbox %d of %d: %v", i+1, n, err)
		}
		ids = append(ids, resp.GetPodSandboxId())
	}
	return ids
}

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
	var opts []server.Option
	if os.Getenv(childDecodeAllEnv) != "" {
		opts = append(opts, server.WithEveryCallDecoded())
	}
	srv, err := server.New(server.Config{
		SocketPath:     socket,
		DefaultTimeout: server.DefaultRequestTimeout,
		Policy:         policy.DefaultConfig(),
	}, rt, opts...)
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
// and returns a client of its socket and the child's pid.
func gatewayProcess(b *testing.B, endpoint string, decodeAll bool) (client, int) {
	b.Helper()
	path := socketPath(b)
	env := []string{childEndpointEnv + "=" + endpoint, childSocketEnv + "=" + path}
	if decodeAll {
		env = append(env, childDecodeAllEnv+"=1")
	}
	// SPLITLET_BENCH_GATEWAY_GOMAXPROCS and _GOGC tune the child's Go
	// runtime alone (over server.Process's defaults), to compare settings
	// for the gateway process without changing the client's.
	for _, v := range []string{"GOMAXPROCS", "GOGC"} {
		if val := os.Getenv("SPLITLET_BENCH_GATEWAY_" + v); val != "" {
			env = append(env, v+"="+val)
		}
	}
	pid := startChild(b, "gateway child", env...)
	return dial(b, path), pid
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

// processCPU is the user and system CPU process pid has used, from
// /proc/PID/stat in clock ticks (USER_HZ, 100 on Linux).
func processCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// utime and stime are the 12th and 13th fields after it.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	var utime, stime int64
	if _, err := fmt.Sscan(fields[11]+" "+fields[12], &utime, &stime); err != nil {
		b.Fatalf("/proc/%d/stat: %v", pid, err)
	}
	return time.Duration(utime+stime) * (time.Second / 100)
}
