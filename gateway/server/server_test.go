package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend"
	"github.com/splitlet/splitlet/gateway/policy"
	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"
)

// socketDir is a short temporary directory: t.TempDir paths can exceed the
// 108-byte limit of a unix socket path.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

type harness struct {
	srv    *Server
	sock   string
	conn   *grpc.ClientConn
	cancel context.CancelFunc
	done   chan error // Serve's result
}

// start serves rt with cfg (SocketPath filled in when empty) and opts, and
// connects a client over the unix socket.
func start(t *testing.T, cfg Config, rt backend.Runtime, opts ...Option) *harness {
	t.Helper()
	if cfg.SocketPath == "" {
		cfg.SocketPath = filepath.Join(socketDir(t), "gw.sock")
	}
	srv, err := New(cfg, rt, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{srv: srv, sock: cfg.SocketPath, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- srv.Serve(ctx) }()
	h.conn, err = grpc.NewClient("unix://"+cfg.SocketPath, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.conn.Close()
		cancel()
		<-h.done
	})
	return h
}

// stop cancels Serve and returns its result.
func (h *harness) stop(t *testing.T) error {
	t.Helper()
	h.cancel()
	select {
	case err := <-h.done:
		h.done <- err // for the cleanup
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context was cancelled")
		return nil
	}
}

func (h *harness) runtime() runtimeapi.RuntimeServiceClient {
	return runtimeapi.NewRuntimeServiceClient(h.conn)
}

func TestSocketFile(t *testing.T) {
	t.Run("created with mode 0660 in a new parent directory", func(t *testing.T) {
		path := filepath.Join(socketDir(t), "sub", "dir", "gw.sock")
		start(t, Config{SocketPath: path}, newTestRuntime())
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatalf("socket missing after New: %v", err)
		}
		if fi.Mode().Type() != os.ModeSocket {
			t.Errorf("%s is %v, want a socket", path, fi.Mode().Type())
		}
		if got := fi.Mode().Perm(); got != 0o660 {
			t.Errorf("socket mode = %#o, want 0660", got)
		}
	})
	t.Run("custom mode and numeric group", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("chown to another group needs root")
		}
		path := filepath.Join(socketDir(t), "gw.sock")
		start(t, Config{SocketPath: path, SocketMode: 0o600, SocketGroup: "12345"}, newTestRuntime())
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o600 {
			t.Errorf("socket mode = %#o, want 0600", got)
		}
		if gid := fi.Sys().(*syscall.Stat_t).Gid; gid != 12345 {
			t.Errorf("socket gid = %d, want 12345", gid)
		}
	})
	t.Run("stale socket is replaced", func(t *testing.T) {
		path := filepath.Join(socketDir(t), "gw.sock")
		stale, err := (&netListenConfig{}).listenUnixNoUnlink(path)
		if err != nil {
			t.Fatal(err)
		}
		stale.Close() // leaves the file behind, as a crashed process would
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("setup: stale socket not left behind: %v", err)
		}
		h := start(t, Config{SocketPath: path}, newTestRuntime())
		if _, err := h.runtime().Version(context.Background(), &runtimeapi.VersionRequest{}); err != nil {
			t.Fatalf("Version over the replaced socket: %v", err)
		}
	})
	t.Run("a live socket is not stolen", func(t *testing.T) {
		h := start(t, Config{}, newTestRuntime())
		_, err := New(Config{SocketPath: h.sock}, newTestRuntime())
		if !errors.Is(err, errdefs.ErrAlreadyExists) {
			t.Fatalf("New on a live socket = %v, want ErrAlreadyExists", err)
		}
	})
	t.Run("a regular file is not removed", func(t *testing.T) {
		path := filepath.Join(socketDir(t), "gw.sock")
		if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := New(Config{SocketPath: path}, newTestRuntime()); err == nil {
			t.Fatal("New replaced a regular file")
		}
		if b, _ := os.ReadFile(path); string(b) != "data" {
			t.Fatal("the regular file was changed")
		}
	})
}

func TestErrorsValidationAndPolicy(t *testing.T) {
	backends(t, testErrorsValidationAndPolicy)
}

func testErrorsValidationAndPolicy(t *testing.T, rt *testRuntime, b backend.Runtime) {
	h := start(t, Config{Policy: policy.DefaultConfig()}, b)
	client := h.runtime()
	ctx := context.Background()

	privileged := &runtimeapi.CreateContainerRequest{
		PodSandboxId: "sb1",
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "c1"},
			Linux: &runtimeapi.LinuxContainerConfig{
				SecurityContext: &runtimeapi.LinuxContainerSecurityContext{Privileged: true}},
		},
		SandboxConfig: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "name", Namespace: "ns"}},
	}
	tests := []struct {
		desc       string
		call       func() error
		wantCode   codes.Code
		wantMsg    string
		reached    string // backend method that must have been called
		notReached string // backend method that must NOT have been called
	}{
		{desc: "errdefs NotFound becomes NotFound with the message",
			call: func() error {
				_, err := client.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "abc"})
				return err
			},
			wantCode: codes.NotFound, wantMsg: `container "abc": not found`},
		{desc: "status error passes through with code and message",
			call: func() error {
				_, err := client.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: "status"})
				return err
			},
			wantCode: codes.FailedPrecondition, wantMsg: "container c1 is in CONTAINER_EXITED state"},
		{desc: "wrapped status error keeps its code",
			call: func() error {
				_, err := client.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: "wrapped-status"})
				return err
			},
			wantCode: codes.ResourceExhausted, wantMsg: "start: rpc error: code = ResourceExhausted desc = no room"},
		{desc: "plain error is Unknown with its message",
			call: func() error {
				_, err := client.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: "plain"})
				return err
			},
			wantCode: codes.Unknown, wantMsg: "something broke"},
		{desc: "StartContainer without container_id is InvalidArgument",
			call: func() error {
				_, err := client.StartContainer(ctx, &runtimeapi.StartContainerRequest{})
				return err
			},
			wantCode: codes.InvalidArgument, wantMsg: "StartContainer: container_id is required"},
		{desc: "CreateContainer without config is InvalidArgument",
			call: func() error {
				_, err := client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: "sb1"})
				return err
			},
			wantCode: codes.InvalidArgument, wantMsg: "CreateContainer: config is required", notReached: "CreateContainer"},
		{desc: "CreateContainer without metadata is InvalidArgument",
			call: func() error {
				_, err := client.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: "sb1", Config: &runtimeapi.ContainerConfig{}})
				return err
			},
			wantCode: codes.InvalidArgument, wantMsg: "CreateContainer: config.metadata is required", notReached: "CreateContainer"},
		{desc: "RunPodSandbox without metadata is InvalidArgument",
			call: func() error {
				_, err := client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{}})
				return err
			},
			wantCode: codes.InvalidArgument, wantMsg: "RunPodSandbox: config.metadata is required", notReached: "RunPodSandbox"},
		{desc: "privileged container is PermissionDenied and never reaches the backend",
			call: func() error {
				_, err := client.CreateContainer(ctx, privileged)
				return err
			},
			wantCode:   codes.PermissionDenied,
			wantMsg:    `policy: privileged containers are not allowed (container "c1" in pod "ns/name")`,
			notReached: "CreateContainer"},
		{desc: "host network pod is allowed by default",
			call: func() error {
				_, err := client.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
					Metadata: &runtimeapi.PodSandboxMetadata{Name: "n", Namespace: "ns"},
					Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
						NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
				}})
				return err
			},
			wantCode: codes.OK, reached: "RunPodSandbox"},
		{desc: "panic in the backend is Internal and the server lives on",
			call: func() error {
				_, err := client.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{Id: "panic"}})
				return err
			},
			wantCode: codes.Internal, wantMsg: "ListContainers: panic: test panic: internal"},
		{desc: "after the panic calls still work",
			call: func() error {
				_, err := client.Version(ctx, &runtimeapi.VersionRequest{})
				return err
			},
			wantCode: codes.OK, reached: "Version"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			err := tc.call()
			st, _ := status.FromError(err)
			if st.Code() != tc.wantCode {
				t.Fatalf("code = %v (%v), want %v", st.Code(), err, tc.wantCode)
			}
			if tc.wantMsg != "" && st.Message() != tc.wantMsg {
				t.Errorf("message = %q, want %q", st.Message(), tc.wantMsg)
			}
			if tc.reached != "" && !rt.called(tc.reached) {
				t.Errorf("%s did not reach the backend", tc.reached)
			}
			if tc.notReached != "" && rt.called(tc.notReached) {
				t.Errorf("%s reached the backend", tc.notReached)
			}
		})
	}
}

func TestDefaultDeadline(t *testing.T) {
	const def = 30 * time.Second
	tests := []struct {
		desc     string
		timeout  time.Duration // Config.DefaultTimeout
		callerDL time.Duration // 0 = the caller sets no deadline
		call     func(context.Context, runtimeapi.RuntimeServiceClient) error
		method   string
		wantMin  time.Duration // -1 = no deadline expected
		wantMax  time.Duration
	}{
		{desc: "unary call without deadline gets the default", timeout: def, method: "PodSandboxStatus",
			call: func(ctx context.Context, c runtimeapi.RuntimeServiceClient) error {
				_, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "x"})
				return err
			}, wantMin: def - 5*time.Second, wantMax: def},
		{desc: "caller's deadline wins", timeout: def, callerDL: 3 * time.Second, method: "PodSandboxStatus",
			call: func(ctx context.Context, c runtimeapi.RuntimeServiceClient) error {
				_, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "x"})
				return err
			}, wantMin: time.Second, wantMax: 3 * time.Second},
		{desc: "zero default means no deadline", timeout: 0, method: "PodSandboxStatus",
			call: func(ctx context.Context, c runtimeapi.RuntimeServiceClient) error {
				_, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "x"})
				return err
			}, wantMin: -1},
		{desc: "ExecSync without timeout gets no deadline", timeout: def, method: "ExecSync",
			call: func(ctx context.Context, c runtimeapi.RuntimeServiceClient) error {
				_, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "c", Cmd: []string{"true"}})
				return err
			}, wantMin: -1},
		{desc: "ExecSync with a timeout gets the default plus it", timeout: def, method: "ExecSync",
			call: func(ctx context.Context, c runtimeapi.RuntimeServiceClient) error {
				_, err := c.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "c", Cmd: []string{"true"}, Timeout: 100})
				return err
			}, wantMin: def + 95*time.Second, wantMax: def + 100*time.Second},
		{desc: "StopContainer gets the default plus its grace period", timeout: def, method: "StopContainer",
			call: func(ctx context.Context, c runtimeapi.RuntimeServiceClient) error {
				_, err := c.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: "c", Timeout: 600})
				return err
			}, wantMin: def + 595*time.Second, wantMax: def + 600*time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			backends(t, func(t *testing.T, rt *testRuntime, b backend.Runtime) {
				h := start(t, Config{DefaultTimeout: tc.timeout}, b)
				ctx := context.Background()
				if tc.callerDL > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.callerDL)
					defer cancel()
				}
				if err := tc.call(ctx, h.runtime()); err != nil {
					t.Fatal(err)
				}
				got := rt.deadline(tc.method)
				if tc.wantMin < 0 {
					if got >= 0 {
						t.Fatalf("%s saw a deadline %v away, want none", tc.method, got)
					}
					return
				}
				if got < tc.wantMin || got > tc.wantMax {
					t.Fatalf("%s saw a deadline %v away, want between %v and %v", tc.method, got, tc.wantMin, tc.wantMax)
				}
			})
		})
	}

	t.Run("PullImage gets no deadline", func(t *testing.T) {
		rt := newTestRuntime()
		h := start(t, Config{DefaultTimeout: def}, rt)
		_, err := runtimeapi.NewImageServiceClient(h.conn).PullImage(context.Background(),
			&runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := rt.deadline("PullImage"); got >= 0 {
			t.Fatalf("PullImage saw a deadline %v away, want none", got)
		}
	})
}

func TestMetrics(t *testing.T) {
	dir := socketDir(t)
	h := start(t, Config{SocketPath: filepath.Join(dir, "gw.sock"), MetricsAddr: "127.0.0.1:0"}, newTestRuntime())
	client := h.runtime()
	ctx := context.Background()
	for range 2 {
		client.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "x"})
	}
	if _, err := client.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := healthpb.NewHealthClient(h.conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}

	rec := httptest.NewRecorder()
	h.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`splitlet_gateway_runtime_operations_total{code="NotFound",operation_type="ContainerStatus"} 2`,
		`splitlet_gateway_runtime_operations_total{code="OK",operation_type="Version"} 1`,
		`splitlet_gateway_runtime_operations_errors_total{operation_type="ContainerStatus"} 2`,
		`splitlet_gateway_runtime_operations_duration_seconds_count{operation_type="Version"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(body, `splitlet_gateway_runtime_operations_errors_total{operation_type="Version"}`) {
		t.Error("a successful Version was counted as an error")
	}
	if strings.Contains(body, `operation_type="Check"`) {
		t.Error("a health check was counted as a runtime operation")
	}

	// The same over the real listener, and /healthz.
	base := "http://" + h.srv.MetricsAddr().String()
	for path, want := range map[string]string{"/metrics": "splitlet_gateway_runtime_operations_total", "/healthz": "ok"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), want) {
			t.Errorf("GET %s = %d %q, want 200 containing %q", path, resp.StatusCode, b, want)
		}
	}
}

func TestHealth(t *testing.T) {
	h := start(t, Config{}, newTestRuntime())
	hc := healthpb.NewHealthClient(h.conn)
	ctx := context.Background()
	for _, svc := range []string{"", "runtime.v1.RuntimeService", "runtime.v1.ImageService"} {
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Check(%q) = %v, %v; want SERVING", svc, resp.GetStatus(), err)
		}
	}
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: "splitlet.gateway.v1.FakeControlService"}); status.Code(err) != codes.NotFound {
		t.Errorf("control service health = %v, want NotFound for a backend without it", err)
	}

	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watch, err := hc.Watch(watchCtx, &healthpb.HealthCheckRequest{Service: "runtime.v1.RuntimeService"})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := watch.Recv(); err != nil || first.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first watch update = %v, %v; want SERVING", first.GetStatus(), err)
	}
	h.cancel()
	next, err := watch.Recv()
	if err != nil {
		t.Fatalf("watch ended without an update: %v", err)
	}
	if next.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("status after shutdown = %v, want NOT_SERVING", next.GetStatus())
	}
	stopWatch() // lets the graceful stop finish
	if err := h.stop(t); err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
}

func TestControlServiceIsOptional(t *testing.T) {
	ctx := context.Background()
	plain := start(t, Config{}, newTestRuntime())
	_, err := gatewayv1.NewFakeControlServiceClient(plain.conn).GetFaults(ctx, &gatewayv1.GetFaultsRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("GetFaults on a plain backend = %v, want Unimplemented", err)
	}
	scripted := start(t, Config{}, &controlRuntime{testRuntime: newTestRuntime()})
	resp, err := gatewayv1.NewFakeControlServiceClient(scripted.conn).GetFaults(ctx, &gatewayv1.GetFaultsRequest{})
	if err != nil || len(resp.GetPullFailures()) != 1 || resp.GetPullFailures()[0] != "marker" {
		t.Errorf("GetFaults on a scriptable backend = %v, %v; want the backend's reply", resp, err)
	}
	hresp, err := healthpb.NewHealthClient(scripted.conn).Check(ctx,
		&healthpb.HealthCheckRequest{Service: "splitlet.gateway.v1.FakeControlService"})
	if err != nil || hresp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("control service health = %v, %v; want SERVING", hresp.GetStatus(), err)
	}
}

func TestGracefulShutdown(t *testing.T) {
	rt := newTestRuntime()
	h := start(t, Config{ShutdownTimeout: 5 * time.Second}, rt)
	client := h.runtime()
	ctx := context.Background()

	events, err := client.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := events.Recv(); err != nil {
		t.Fatalf("first event: %v", err)
	}

	slow := make(chan error, 1)
	go func() {
		_, err := client.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "slow"})
		slow <- err
	}()
	waitFor(t, func() bool { return rt.called("PodSandboxStatus") })

	start := time.Now()
	if err := h.stop(t); err != nil {
		t.Fatalf("Serve = %v, want nil after ctx cancel", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("shutdown took %v: the open event stream held it up", d)
	}
	if err := <-slow; err != nil {
		t.Errorf("in-flight call cut off by a graceful shutdown: %v", err)
	}
	_, err = events.Recv()
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "shutting down") {
		t.Errorf("event stream ended with %v, want Unavailable saying the gateway is shutting down", err)
	}
	if _, err := os.Stat(h.sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still present after shutdown: %v", err)
	}
}

func TestCloseBeforeServe(t *testing.T) {
	path := filepath.Join(socketDir(t), "gw.sock")
	srv, err := New(Config{SocketPath: path, MetricsAddr: "127.0.0.1:0"}, newTestRuntime())
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.MetricsAddr().String()
	srv.Close()
	srv.Close() // idempotent
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket still present after Close: %v", err)
	}
	if err := srv.Serve(context.Background()); err == nil {
		t.Error("Serve after Close returned nil, want an error")
	}
	// The metrics port was released.
	srv2, err := New(Config{SocketPath: path, MetricsAddr: addr}, newTestRuntime())
	if err != nil {
		t.Fatalf("New on the released addresses: %v", err)
	}
	srv2.Close()
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		desc    string
		cfg     Config
		wantErr string
	}{
		{desc: "socket only is fine", cfg: Config{SocketPath: "/run/x.sock"}},
		{desc: "nothing to listen on", cfg: Config{}, wantErr: "a unix socket path or a TCP address is required"},
		{desc: "TCP without TLS", cfg: Config{TCPAddr: ":9100"}, wantErr: "mutual TLS is required"},
		{desc: "negative timeout", cfg: Config{SocketPath: "/x", DefaultTimeout: -time.Second}, wantErr: "must not be negative"},
		{desc: "mode beyond permissions", cfg: Config{SocketPath: "/x", SocketMode: os.ModeSetuid | 0o660}, wantErr: "bits beyond permissions"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("Validate() = %v, want an invalid-argument error containing %q", err, tc.wantErr)
			}
		})
	}
}

// waitFor checks cond on every tick until it holds, failing the test after 5s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatal("condition not met within 5s")
		case <-tick.C:
		}
	}
}
