package stack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/apiauth"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

// Binary names, as `make build` and Build write them.
const (
	GatewayBinary   = "splitlet-gateway"
	AdmissionBinary = "splitlet-admission"
	SyncBinary      = "splitlet-sync"
)

// Defaults of Config.
const (
	DefaultNodeName     = "splitlet-node"
	DefaultStartTimeout = 30 * time.Second
	// DefaultStopGrace is how long a process has after SIGTERM; sync and
	// the gateway shut down within their own 10 s timeouts.
	DefaultStopGrace = 15 * time.Second
)

// Config says how to start the stack. The zero value of every field but
// BinDir and Dir is usable.
type Config struct {
	// BinDir holds splitlet-gateway, splitlet-admission and splitlet-sync.
	BinDir string
	// Dir holds every process's state, log and socket; it is created.
	Dir string
	// NodeName is given to admission and sync (default DefaultNodeName).
	NodeName string

	// RuntimeEndpoint is the CRI endpoint the gateway forwards to with its
	// `cri` backend; empty runs the built-in `fake` runtime.
	RuntimeEndpoint string
	// GatewayMetricsAddr serves the gateway's /metrics and /healthz; empty
	// serves none, a port of 0 takes a free port.
	GatewayMetricsAddr string
	// GatewayArgs are added after the flags the launcher sets; for a flag
	// given twice the last wins.
	GatewayArgs []string

	// GatewayOnly starts the gateway alone, for a CRI client that is not
	// sync (the kubelet in the bench, the CRI scenario suite).
	GatewayOnly bool
	// NoAdmission runs sync without admission: sync then admits every pod
	// itself and evicts nothing.
	NoAdmission bool
	// AdmissionAddr is admission's listen address, host:port or
	// unix:///path; empty or a port of 0 takes a free loopback port.
	AdmissionAddr string
	// AdmissionConfig is the body of admission's configuration file. The
	// launcher adds gatewayEndpoint and passes --listen and --node-name as
	// flags, so the body must not set gatewayEndpoint. Empty: node facts
	// are detected from the machine, with the node's and eviction's disk
	// roots moved under Dir.
	AdmissionConfig string
	AdmissionArgs   []string

	// SyncAddr is sync's listen address (PodService, /healthz, /metrics),
	// host:port or unix:///path; empty or a port of 0 takes a free
	// loopback port. Both APIs require Stack.Token either way.
	SyncAddr string
	// ManifestDir, when set, is sync's static pod directory.
	ManifestDir string
	SyncArgs    []string

	// StartTimeout bounds each process's wait for health (default
	// DefaultStartTimeout); StopGrace its wait after SIGTERM.
	StartTimeout time.Duration
	StopGrace    time.Duration

	Logger *zap.Logger
}

// Stack is a started gateway, admission (unless Config.NoAdmission or
// GatewayOnly) and sync (unless GatewayOnly).
type Stack struct {
	cfg Config
	log *zap.Logger

	Gateway   *Process
	Admission *Process // nil with Config.NoAdmission or GatewayOnly
	Sync      *Process // nil with Config.GatewayOnly

	// GatewaySocket is the gateway's CRI socket path.
	GatewaySocket string
	// GatewayMetricsAddr, AdmissionAddr and SyncAddr are host:port or,
	// for the APIs, unix:///path ("" when not served).
	GatewayMetricsAddr string
	AdmissionAddr      string
	SyncAddr           string
	// Token is the bearer token sync's and admission's APIs require
	// (--listen-token-file); TokenFile holds it. Clients of SyncDial and
	// PodService send it.
	Token     string
	TokenFile string
	// StateDir is sync's --state-dir, LogsDir its --pod-logs-root.
	StateDir string
	LogsDir  string

	criConn *grpc.ClientConn
	sockDir string

	httpOnce   sync.Once
	httpClient *http.Client
	httpBase   string
	httpErr    error // a short private directory holding the socket, if Dir is too deep
}

// Start starts the gateway, admission and sync in that order, each once
// the one it depends on is healthy, and returns the running stack. On error
// whatever was started is stopped again.
func Start(ctx context.Context, cfg Config) (s *Stack, retErr error) {
	if cfg.BinDir == "" || cfg.Dir == "" {
		return nil, errors.New("stack: Config.BinDir and Config.Dir are required")
	}
	if cfg.NodeName == "" {
		cfg.NodeName = DefaultNodeName
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	s = &Stack{cfg: cfg, log: log, StateDir: filepath.Join(dir, "state"), LogsDir: filepath.Join(dir, "logs")}
	for _, d := range []string{s.StateDir, s.LogsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := s.writeToken(); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			s.Stop()
		}
	}()
	if err := s.startGateway(ctx); err != nil {
		return s, err
	}
	if cfg.GatewayOnly {
		return s, nil
	}
	if !cfg.NoAdmission {
		if err := s.startAdmission(ctx); err != nil {
			return s, err
		}
	}
	if err := s.startSync(ctx); err != nil {
		return s, err
	}
	return s, nil
}

// socketPath is dir/name, or the same name in a short private directory
// when that path would pass the 108-byte limit of unix sockets (less the
// temporary name sync binds its sockets under first).
func (s *Stack) socketPath(name string) (string, error) {
	sock := filepath.Join(s.cfg.Dir, name)
	if len(sock) <= 92 {
		return sock, nil
	}
	if s.sockDir == "" {
		d, err := os.MkdirTemp("", "splitlet-stack")
		if err != nil {
			return "", err
		}
		s.sockDir = d
	}
	return filepath.Join(s.sockDir, name), nil
}

func (s *Stack) startGateway(ctx context.Context) error {
	sock, err := s.socketPath("gateway.sock")
	if err != nil {
		return err
	}
	_ = os.Remove(sock) // a socket left by a killed gateway
	s.GatewaySocket = sock
	if s.cfg.GatewayMetricsAddr != "" {
		if s.GatewayMetricsAddr, err = resolveAddr(s.cfg.GatewayMetricsAddr); err != nil {
			return err
		}
	}
	args := []string{
		"--socket=" + sock,
		"--metrics-addr=" + s.GatewayMetricsAddr,
		// sync mounts emptyDir volumes and termination-message files from
		// its state directory; the gateway's host-path policy must allow it.
		"--allowed-host-path=" + s.StateDir,
	}
	if s.cfg.RuntimeEndpoint == "" {
		args = append(args, "--backend=fake")
	} else {
		args = append(args, "--backend=cri", "--runtime-endpoint="+s.cfg.RuntimeEndpoint)
	}
	args = append(args, s.cfg.GatewayArgs...)
	// A short reconnect back-off: tests restart the gateway and expect the
	// connection back within a second, not after grpc's default 2 minutes.
	s.criConn, err = grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 5 * time.Second,
		}))
	if err != nil {
		return err
	}
	s.Gateway = newProcess("gateway", filepath.Join(s.cfg.BinDir, GatewayBinary), s.logPath("gateway"), criReady(s.criConn), args...)
	return s.launch(ctx, s.Gateway)
}

// EvictionHard are the hard eviction thresholds of the nodes tests start,
// splitlet's (admission's default configuration here) and the kubelet's
// (internal/kubeletnode) alike. The machine's disk is shared with builds
// and other tests: the kubelet's defaults (10% nodefs, 15% imagefs
// available) would put the node under disk pressure, and reject or evict
// test pods, for reasons outside the test. Every signal is listed so the
// choice is visible.
var EvictionHard = map[string]string{
	"memory.available":   "100Mi",
	"nodefs.available":   "1%",
	"nodefs.inodesFree":  "1%",
	"imagefs.available":  "1%",
	"imagefs.inodesFree": "1%",
}

// EvictionHardYAML is EvictionHard as the "hard:" line of admission's
// eviction section, for tests that write their own AdmissionConfig.
func EvictionHardYAML() string {
	keys := slices.Sorted(maps.Keys(EvictionHard))
	fields := make([]string, 0, len(keys))
	for _, k := range keys {
		fields = append(fields, fmt.Sprintf("%s: %q", k, EvictionHard[k]))
	}
	return "  hard: {" + strings.Join(fields, ", ") + "}\n"
}

func (s *Stack) startAdmission(ctx context.Context) error {
	addr, err := resolveAPIAddr(s.cfg.AdmissionAddr)
	if err != nil {
		return err
	}
	s.AdmissionAddr = addr
	body := s.cfg.AdmissionConfig
	if body == "" {
		body = fmt.Sprintf("node:\n  rootDir: %s\neviction:\n  nodeFsRoot: %s\n  imageFsRoot: %s\n%s", s.StateDir, s.StateDir, s.StateDir, EvictionHardYAML())
	}
	path := filepath.Join(s.cfg.Dir, "admission.yaml")
	conf := "# Written by the splitlet stack launcher.\ngatewayEndpoint: unix://" + s.GatewaySocket + "\n" + body
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return err
	}
	args := append([]string{"--config=" + path, "--listen=" + addr, "--listen-token-file=" + s.TokenFile, "--node-name=" + s.cfg.NodeName}, s.cfg.AdmissionArgs...)
	s.Admission = newProcess("admission", filepath.Join(s.cfg.BinDir, AdmissionBinary), s.logPath("admission"),
		s.dialOK(s.dial(addr), "/metrics"), args...)
	return s.launch(ctx, s.Admission)
}

func (s *Stack) startSync(ctx context.Context) error {
	addr, err := resolveAPIAddr(s.cfg.SyncAddr)
	if err != nil {
		return err
	}
	s.SyncAddr = addr
	// The pod-resources socket beside the gateway's, not under a deep
	// StateDir where the path could pass the limit of unix sockets.
	podResources, err := s.socketPath("pod-resources.sock")
	if err != nil {
		return err
	}
	args := []string{
		"--listen=" + addr,
		"--listen-token-file=" + s.TokenFile,
		"--pod-resources-socket=" + podResources,
		"--runtime-endpoint=unix://" + s.GatewaySocket,
		"--state-dir=" + s.StateDir,
		"--pod-logs-root=" + s.LogsDir,
		"--node-name=" + s.cfg.NodeName,
		// Image garbage collection off, as the kubelet's in
		// internal/kubeletnode: test images are imported from files, and
		// a disk filled by other work would have it remove them.
		"--image-gc-high-threshold=100",
		// Tests run on machines with swap too, as the kubelet's in
		// internal/kubeletnode (failSwapOn: false); containers are kept
		// off it all the same (NoSwap).
		"--fail-swap-on=false",
	}
	if s.cfg.RuntimeEndpoint == "" {
		// The fake runtime's pods run no process, so their pod cgroups
		// would hold nothing: no cgroups on the host for them (benchmarks
		// start thousands).
		args = append(args, "--cgroups-per-qos=false")
	}
	if s.Admission != nil {
		args = append(args, "--admission-endpoint="+s.AdmissionAddr, "--admission-token-file="+s.TokenFile)
	}
	if s.cfg.ManifestDir != "" {
		args = append(args, "--manifest-dir="+s.cfg.ManifestDir)
	}
	args = append(args, s.cfg.SyncArgs...)
	s.Sync = newProcess("sync", filepath.Join(s.cfg.BinDir, SyncBinary), s.logPath("sync"), s.dialOK(s.SyncDial(), "/healthz"), args...)
	return s.launch(ctx, s.Sync)
}

// launch starts p, records its pid file, and waits until it is healthy.
func (s *Stack) launch(ctx context.Context, p *Process) error {
	p.pidFile = s.pidPath(p.Name)
	if err := p.start(); err != nil {
		return err
	}
	s.log.Info("started", zap.String("process", p.Name), zap.Int("pid", p.Pid()), zap.String("log", p.LogPath))
	if err := p.WaitReady(ctx, s.cfg.StartTimeout); err != nil {
		return err
	}
	s.log.Info("healthy", zap.String("process", p.Name))
	return nil
}

func (s *Stack) logPath(name string) string { return filepath.Join(s.cfg.Dir, name+".log") }
func (s *Stack) pidPath(name string) string { return filepath.Join(s.cfg.Dir, name+".pid") }

// Processes lists the started processes in start order.
func (s *Stack) Processes() []*Process {
	var out []*Process
	for _, p := range []*Process{s.Gateway, s.Admission, s.Sync} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// Alive returns an error naming the first process that has exited.
func (s *Stack) Alive() error {
	for _, p := range s.Processes() {
		if err := p.Exited(); err != nil {
			return err
		}
	}
	return nil
}

// SyncURL is sync's PodService endpoint: http://host:port, or
// unix:///path (which SyncDial's client dials).
func (s *Stack) SyncURL() string {
	if strings.HasPrefix(s.SyncAddr, apiauth.UnixScheme) {
		return s.SyncAddr
	}
	return "http://" + s.SyncAddr
}

// SyncDial reaches sync's PodService with the stack's token.
func (s *Stack) SyncDial() apiauth.Dial { return s.dial(s.SyncAddr) }

// syncHTTP is one HTTP client of sync for the stack's own calls (Metric,
// PodService): a client per call would leave a connection open on sync's
// side each time.
func (s *Stack) syncHTTP() (*http.Client, string, error) {
	s.httpOnce.Do(func() { s.httpClient, s.httpBase, s.httpErr = s.SyncDial().Client(false) })
	return s.httpClient, s.httpBase, s.httpErr
}

// AdmissionDial reaches admission's AdmissionService with the token.
func (s *Stack) AdmissionDial() apiauth.Dial { return s.dial(s.AdmissionAddr) }

func (s *Stack) dial(addr string) apiauth.Dial {
	return apiauth.Dial{Endpoint: addr, Token: s.Token}
}

// PodService is a client of sync's PodService speaking the Connect
// protocol (HTTP/1.1), with the stack's token.
func (s *Stack) PodService(opts ...connect.ClientOption) podv1connect.PodServiceClient {
	hc, base, err := s.syncHTTP()
	if err != nil {
		// SyncAddr was checked when sync started.
		panic(err)
	}
	return podv1connect.NewPodServiceClient(hc, base, opts...)
}

// writeToken makes the stack's API token: 32 random bytes, hex, in a
// file only its owner reads.
func (s *Stack) writeToken() error {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	s.Token = hex.EncodeToString(b)
	s.TokenFile = filepath.Join(s.cfg.Dir, "api.token")
	return os.WriteFile(s.TokenFile, []byte(s.Token+"\n"), 0o600)
}

// CRI is a client of the gateway's RuntimeService on the launcher's
// connection; it stays usable across gateway restarts.
func (s *Stack) CRI() runtimeapi.RuntimeServiceClient {
	return runtimeapi.NewRuntimeServiceClient(s.criConn)
}

// CRIConn is the launcher's connection to the gateway, for its other
// services (the fake backend's FakeControlService).
func (s *Stack) CRIConn() *grpc.ClientConn { return s.criConn }

// Images is a client of the gateway's ImageService.
func (s *Stack) Images() runtimeapi.ImageServiceClient {
	return runtimeapi.NewImageServiceClient(s.criConn)
}

// Env is the stack's addresses as environment variables, as splitctl and
// crictl read them.
func (s *Stack) Env() []string {
	env := []string{
		"SPLITLET_SERVER=" + s.SyncURL(),
		"SPLITLET_TOKEN=" + s.Token,
		"CONTAINER_RUNTIME_ENDPOINT=unix://" + s.GatewaySocket,
	}
	if strings.HasPrefix(s.AdmissionAddr, apiauth.UnixScheme) {
		env = append(env, "SPLITLET_ADMISSION="+s.AdmissionAddr)
	} else if s.AdmissionAddr != "" {
		env = append(env, "SPLITLET_ADMISSION=http://"+s.AdmissionAddr)
	}
	if s.GatewayMetricsAddr != "" {
		env = append(env, "SPLITLET_GATEWAY_METRICS=http://"+s.GatewayMetricsAddr)
	}
	return env
}

// Stop stops sync, admission and the gateway in that order — a client
// before the server it calls — each with Config.StopGrace after SIGTERM.
// It is safe to call more than once.
func (s *Stack) Stop() {
	for _, p := range []*Process{s.Sync, s.Admission, s.Gateway} {
		if p == nil {
			continue
		}
		p.Stop(s.cfg.StopGrace)
		_ = os.Remove(s.pidPath(p.Name))
	}
	if s.criConn != nil {
		_ = s.criConn.Close()
	}
	if s.sockDir != "" {
		_ = os.RemoveAll(s.sockDir)
	}
}

// StopDetached stops a stack that a launcher left running in dir (its pid
// files), in the same order as Stop, and reports which processes it stopped.
func StopDetached(dir string, grace time.Duration) ([]string, error) {
	var stopped []string
	for _, name := range []string{"sync", "admission", "gateway"} {
		pidFile := filepath.Join(dir, name+".pid")
		raw, err := os.ReadFile(pidFile)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return stopped, err
		}
		var pid int
		if _, err := fmt.Sscan(strings.TrimSpace(string(raw)), &pid); err != nil {
			return stopped, fmt.Errorf("%s: %w", pidFile, err)
		}
		if stopPid(pid, "splitlet-"+name, grace) {
			stopped = append(stopped, name)
		}
		_ = os.Remove(pidFile)
	}
	return stopped, nil
}

// Running reports which of the stack's processes recorded in dir still run.
func Running(dir string) map[string]int {
	out := map[string]int{}
	for _, name := range []string{"gateway", "admission", "sync"} {
		raw, err := os.ReadFile(filepath.Join(dir, name+".pid"))
		if err != nil {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(strings.TrimSpace(string(raw)), &pid); err == nil && pidRunning(pid, "splitlet-"+name) {
			out[name] = pid
		}
	}
	return out
}

// FreeAddr returns a loopback address nobody listens on now. Another
// process could take the port before ours binds it; that shows as a failed
// start naming the address.
func FreeAddr() (string, error) { return resolveAddr("") }

// resolveAPIAddr is resolveAddr, keeping a unix:///path as it is.
func resolveAPIAddr(addr string) (string, error) {
	if strings.HasPrefix(addr, apiauth.UnixScheme) {
		return addr, nil
	}
	return resolveAddr(addr)
}

// resolveAddr turns "" or host:0 into a free port on host (127.0.0.1 by
// default) and returns any other address as it is.
func resolveAddr(addr string) (string, error) {
	host := "127.0.0.1"
	if addr != "" {
		h, port, err := net.SplitHostPort(addr)
		if err != nil {
			return "", fmt.Errorf("address %q: %w", addr, err)
		}
		if port != "0" {
			return addr, nil
		}
		if h != "" {
			host = h
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// HTTPOK is a health check: GET url answers 200.
func HTTPOK(url string) Check { return httpOK(http.DefaultClient, url) }

func httpOK(hc *http.Client, url string) Check {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// dialOK is HTTPOK over d's client (a unix socket, or TCP).
func (s *Stack) dialOK(d apiauth.Dial, path string) Check {
	hc, base, err := d.Client(false)
	if err != nil {
		return func(context.Context) error { return err }
	}
	return httpOK(hc, base+path)
}

// criReady is the gateway's health check: CRI Version answers.
func criReady(conn *grpc.ClientConn) Check {
	client := runtimeapi.NewRuntimeServiceClient(conn)
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := client.Version(ctx, &runtimeapi.VersionRequest{})
		return err
	}
}
