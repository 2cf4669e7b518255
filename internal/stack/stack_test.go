package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitlet/splitlet/internal/apiauth"
	"go.uber.org/zap/zaptest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// binDir holds the binaries TestMain builds; empty when the build was
// skipped (-short).
var binDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "splitlet-stack-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if _, err := Build(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir = dir
	return m.Run()
}

// shortDir is a temporary directory with a short path (unix sockets are
// limited to 108 bytes; t.TempDir's paths can pass that).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func startStack(t *testing.T, cfg Config) *Stack {
	t.Helper()
	cfg.BinDir = binDir
	if cfg.Dir == "" {
		cfg.Dir = shortDir(t)
	}
	cfg.Logger = zaptest.NewLogger(t)
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

func criVersion(t *testing.T, s *Stack) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := s.CRI().Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatalf("CRI Version through the gateway: %v", err)
	}
	return v.GetRuntimeName()
}

func TestStartWiresThreeProcesses(t *testing.T) {
	s := startStack(t, Config{GatewayMetricsAddr: "127.0.0.1:0"})
	if got := len(s.Processes()); got != 3 {
		t.Fatalf("processes = %d, want gateway, admission and sync", got)
	}
	if err := s.Alive(); err != nil {
		t.Fatal(err)
	}
	if name := criVersion(t, s); name == "" {
		t.Error("gateway answered Version with no runtime name")
	}
	for _, check := range []struct {
		d    apiauth.Dial
		path string
	}{{s.SyncDial(), "/healthz"}, {s.AdmissionDial(), "/metrics"}, {apiauth.Dial{Endpoint: s.GatewayMetricsAddr}, "/healthz"}} {
		if err := s.dialOK(check.d, check.path)(context.Background()); err != nil {
			t.Errorf("%s%s: %v", check.d.Endpoint, check.path, err)
		}
	}
	// sync was told where admission is, and admission where the gateway is.
	if !strings.Contains(strings.Join(s.Sync.Args, " "), "--admission-endpoint="+s.AdmissionAddr) {
		t.Errorf("sync args %v lack --admission-endpoint=%s", s.Sync.Args, s.AdmissionAddr)
	}
	conf, err := os.ReadFile(filepath.Join(s.cfg.Dir, "admission.yaml"))
	if err != nil || !strings.Contains(string(conf), "gatewayEndpoint: unix://"+s.GatewaySocket) {
		t.Errorf("admission.yaml = %q (%v), want the gateway's socket", conf, err)
	}
	running := Running(s.cfg.Dir)
	for _, p := range s.Processes() {
		if running[p.Name] != p.Pid() {
			t.Errorf("Running()[%s] = %d, want pid %d", p.Name, running[p.Name], p.Pid())
		}
	}

	s.Stop()
	for _, p := range s.Processes() {
		if err := p.Exited(); !errors.Is(err, ErrExited) {
			t.Errorf("%s after Stop: Exited() = %v, want ErrExited", p.Name, err)
		}
	}
	if r := Running(s.cfg.Dir); len(r) != 0 {
		t.Errorf("Running after Stop = %v, want none", r)
	}
}

func TestKillAndRestart(t *testing.T) {
	s := startStack(t, Config{NoAdmission: true})
	if s.Admission != nil {
		t.Fatal("NoAdmission started admission")
	}
	for _, p := range []*Process{s.Sync, s.Gateway} {
		before := p.Pid()
		if err := p.Restart(context.Background(), 10*time.Second); err == nil {
			t.Fatalf("%s: Restart of a running process succeeded", p.Name)
		}
		p.Kill()
		if err := p.Exited(); !errors.Is(err, ErrExited) {
			t.Fatalf("%s after Kill: Exited() = %v", p.Name, err)
		}
		if err := p.Restart(context.Background(), 10*time.Second); err != nil {
			t.Fatalf("%s: Restart: %v", p.Name, err)
		}
		if p.Pid() == before {
			t.Errorf("%s: same pid %d after a restart", p.Name, before)
		}
	}
	// The launcher's connection reaches the restarted gateway.
	criVersion(t, s)
	if err := s.dialOK(s.SyncDial(), "/healthz")(context.Background()); err != nil {
		t.Error(err)
	}
	// Both runs wrote to one log.
	if n := strings.Count(s.Gateway.Tail(10000), "\n"); n == 0 {
		t.Error("gateway log is empty")
	}
	// The pid files name the restarted processes, so StopDetached can
	// stop them should this launcher die.
	if got := Running(s.cfg.Dir); got["sync"] != s.Sync.Pid() || got["gateway"] != s.Gateway.Pid() {
		t.Errorf("pid files name %v after the restarts, want sync %d and gateway %d", got, s.Sync.Pid(), s.Gateway.Pid())
	}
}

func TestStartFailureStopsWhatStarted(t *testing.T) {
	s, err := Start(context.Background(), Config{
		BinDir:       binDir,
		Dir:          shortDir(t),
		NoAdmission:  true,
		SyncArgs:     []string{"--no-such-flag"},
		StartTimeout: 10 * time.Second,
		Logger:       zaptest.NewLogger(t),
	})
	if err == nil {
		s.Stop()
		t.Fatal("Start succeeded with a flag sync does not have")
	}
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "no-such-flag") {
		t.Errorf("error = %v, want ErrExited with the end of sync's log", err)
	}
	if s == nil || s.Gateway == nil {
		t.Fatal("no stack returned to inspect")
	}
	if err := s.Gateway.Exited(); !errors.Is(err, ErrExited) {
		t.Errorf("gateway still runs after a failed start: %v", err)
	}
}

func TestStopDetached(t *testing.T) {
	s := startStack(t, Config{})
	stopped, err := StopDetached(s.cfg.Dir, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(stopped, ","); got != "sync,admission,gateway" {
		t.Errorf("stopped %q, want sync,admission,gateway in that order", got)
	}
	for _, p := range s.Processes() {
		select {
		case <-p.Done():
		case <-time.After(10 * time.Second):
			t.Errorf("%s still runs after StopDetached", p.Name)
		}
	}
	if again, err := StopDetached(s.cfg.Dir, time.Second); err != nil || len(again) != 0 {
		t.Errorf("second StopDetached = %v, %v; want nothing stopped", again, err)
	}
}

func TestLongDirMovesSocket(t *testing.T) {
	dir := filepath.Join(shortDir(t), strings.Repeat("d", 60), strings.Repeat("e", 60))
	s := startStack(t, Config{Dir: dir, NoAdmission: true})
	if strings.HasPrefix(s.GatewaySocket, dir) || len(s.GatewaySocket) > 100 {
		t.Errorf("socket %s: want a short path outside %s", s.GatewaySocket, dir)
	}
	criVersion(t, s)
	sockDir := filepath.Dir(s.GatewaySocket)
	s.Stop()
	if _, err := os.Stat(sockDir); !os.IsNotExist(err) {
		t.Errorf("socket directory %s left after Stop (%v)", sockDir, err)
	}
}

func TestResolveAddr(t *testing.T) {
	for _, tc := range []struct {
		desc, in string
		same     bool // returned unchanged
		wantErr  bool
	}{
		{desc: "empty takes a free loopback port", in: ""},
		{desc: "port 0 takes a free port on that host", in: "127.0.0.1:0"},
		{desc: "a fixed port is kept", in: "127.0.0.1:7443", same: true},
		{desc: "no port is an error", in: "127.0.0.1", wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := resolveAddr(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("resolveAddr(%q) = %q, want an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.same {
				if got != tc.in {
					t.Errorf("resolveAddr(%q) = %q", tc.in, got)
				}
				return
			}
			host, port, err := net.SplitHostPort(got)
			if err != nil || host != "127.0.0.1" || port == "0" {
				t.Errorf("resolveAddr(%q) = %q, want 127.0.0.1 and a real port", tc.in, got)
			}
		})
	}
}

func TestGatewayOnlyAndStartProcess(t *testing.T) {
	s := startStack(t, Config{GatewayOnly: true})
	if s.Admission != nil || s.Sync != nil || len(s.Processes()) != 1 {
		t.Fatalf("GatewayOnly started %d processes", len(s.Processes()))
	}
	criVersion(t, s)

	// A binary outside the stack gets the same handling: here a second sync
	// on the gateway, as the bench starts the kubelet beside one.
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	dir := shortDir(t)
	p, err := StartProcess(context.Background(), "other", filepath.Join(binDir, SyncBinary), filepath.Join(dir, "other.log"),
		HTTPOK("http://"+addr+"/healthz"), 20*time.Second,
		"--listen="+addr, "--listen-token-file="+s.TokenFile, "--runtime-endpoint=unix://"+s.GatewaySocket, "--state-dir="+filepath.Join(dir, "state"),
		"--pod-logs-root="+filepath.Join(dir, "logs"), "--node-name=other")
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(10 * time.Second)
	if !errors.Is(p.Exited(), ErrExited) {
		t.Error("StartProcess's process still runs after Stop")
	}
	if _, err := StartProcess(context.Background(), "bad", filepath.Join(binDir, SyncBinary), filepath.Join(dir, "bad.log"),
		HTTPOK("http://"+addr+"/healthz"), 10*time.Second, "--no-such-flag"); !errors.Is(err, ErrExited) {
		t.Errorf("StartProcess of a failing binary: %v, want ErrExited", err)
	}
}
