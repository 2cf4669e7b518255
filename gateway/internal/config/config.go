// Package config turns the splitlet-gateway command line into a server.Config
// and logging settings. Flags are the whole configuration: every setting has a
// flag, and each flag's help says what it does and why its default is what it is.
//
//	cfg, err := config.Parse(os.Args[1:], os.Stderr)
//	log, err := cfg.Logger()
//	err = server.Run(ctx, cfg.Server, backends)
package config

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/splitlet/splitlet/gateway/policy"
	"github.com/splitlet/splitlet/gateway/server"
	"github.com/splitlet/splitlet/internal/tracing"
)

// Defaults of the flags that have one worth naming.
const (
	DefaultBackend         = "fake"
	DefaultRuntimeEndpoint = "unix:///run/containerd/containerd.sock"
	DefaultSocket          = "/run/splitlet/gateway.sock"
	// DefaultMetricsAddr is loopback only: metrics describe every pod on the
	// node and are not published off the node unless asked for. 9101 sits
	// beside node_exporter's 9100.
	DefaultMetricsAddr = "127.0.0.1:9101"
	// DefaultStreamingAddr is containerd's default streaming address
	// (stream_server_address 127.0.0.1, stream_server_port 0): loopback,
	// any free port, since the URLs carry their port.
	DefaultStreamingAddr = "127.0.0.1:0"
)

// Config is the parsed command line.
type Config struct {
	Server      server.Config
	LogLevel    zapcore.Level
	LogFormat   string // "json" or "console"
	ShowVersion bool
	Tracing     tracing.Config
}

// Parse parses the gateway's flags from args (without the program name),
// writing usage and errors to output. -h yields flag.ErrHelp.
func Parse(args []string, output io.Writer) (Config, error) {
	var cfg Config
	s := &cfg.Server
	s.Policy = policy.DefaultConfig()
	mode := octalMode(server.DefaultSocketMode)
	hostPaths := &replaceList{values: s.Policy.AllowedHostPathPrefixes}
	capabilities := &replaceList{values: s.Policy.AllowedCapabilities, split: true}
	logLevel := "info"
	var preload string

	fs := flag.NewFlagSet("splitlet-gateway", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.Usage = func() {
		fmt.Fprintf(output, "Usage: splitlet-gateway [flags]\n\n"+
			"Serves CRI (runtime.v1) on a unix socket in front of a container runtime,\n"+
			"with validation, policy, deadlines, logs and metrics.\n\nFlags:\n")
		fs.PrintDefaults()
	}

	fs.StringVar(&s.Backend, "backend", DefaultBackend,
		`runtime behind the gateway: "fake" (in-memory CRI runtime, for tests and demos) or "cri" (forward to --runtime-endpoint)`)
	fs.StringVar(&s.RuntimeEndpoint, "runtime-endpoint", DefaultRuntimeEndpoint,
		"CRI endpoint of the real runtime for --backend=cri: a unix socket path or unix:// URL")
	fs.StringVar(&s.SocketPath, "socket", DefaultSocket,
		"unix socket the gateway serves CRI on; its directory is created and a stale socket removed")
	fs.Var(&mode, "socket-mode", "permissions of the socket, octal; 0660 lets the owner and --socket-group in")
	fs.StringVar(&s.SocketGroup, "socket-group", "",
		"group name or gid given the socket, so its members can reach the runtime (default: the process's group)")
	fs.StringVar(&s.TCPAddr, "listen-tcp", "",
		`also serve CRI on this TCP address (e.g. "0.0.0.0:9100"), mutual TLS only; needs --tls-cert, --tls-key and --tls-client-ca`)
	fs.StringVar(&s.TLS.CertFile, "tls-cert", "", "PEM server certificate of the TCP listener")
	fs.StringVar(&s.TLS.KeyFile, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&s.TLS.ClientCAFile, "tls-client-ca", "",
		"PEM CA bundle; TCP clients must present a certificate it signed")
	fs.StringVar(&s.MetricsAddr, "metrics-addr", DefaultMetricsAddr,
		`address serving Prometheus /metrics and /healthz (and /debug/pprof/ with --profiling) over HTTP; "" disables it`)
	fs.StringVar(&s.StreamingAddr, "streaming-addr", DefaultStreamingAddr,
		"address of the gateway's streaming proxy: CRI Exec, Attach and PortForward return single-use URLs there, "+
			`proxied to the runtime's streaming server, so streams are the gateway's too; "" returns the runtime's URLs unchanged`)
	fs.StringVar(&s.StreamingBaseURL, "streaming-base-url", "",
		"scheme and host:port put in the streaming URLs, when clients reach --streaming-addr under another address "+
			"(a published container port); default http://<--streaming-addr's bound address>")
	fs.BoolVar(&s.Profiling, "profiling", false,
		"serve Go's pprof profiles under /debug/pprof/ on --metrics-addr, like the kubelet's enableProfilingHandler; "+
			"off by default, since profiles expose the process's memory and command line")
	fs.DurationVar(&s.DefaultTimeout, "default-timeout", server.DefaultRequestTimeout,
		"deadline given to unary CRI calls whose caller set none, like the kubelet's --runtime-request-timeout "+
			"(StopContainer and ExecSync get it plus their own timeout, PullImage none); 0 disables")
	fs.DurationVar(&s.ShutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout,
		"on SIGTERM/SIGINT, how long in-flight calls may finish before the gateway stops hard")
	fs.BoolVar(&s.Policy.AllowPrivileged, "allow-privileged", s.Policy.AllowPrivileged,
		"let pods and containers run privileged (denied by default)")
	fs.BoolVar(&s.Policy.AllowHostNetwork, "allow-host-network", s.Policy.AllowHostNetwork,
		"let pods use the node's network namespace (allowed by default: node agents need it, and without CNI it is the only network)")
	fs.BoolVar(&s.Policy.AllowHostPID, "allow-host-pid", s.Policy.AllowHostPID,
		"let pods and containers use the node's PID namespace (denied by default)")
	fs.BoolVar(&s.Policy.AllowHostIPC, "allow-host-ipc", s.Policy.AllowHostIPC,
		"let pods and containers use the node's IPC namespace (denied by default)")
	fs.Var(hostPaths, "allowed-host-path",
		"directory under which host paths may be mounted into containers; repeat for several; giving it replaces the default "+
			policy.DefaultHostPathPrefix+" (sync's pod directories); \"/\" allows every path")
	fs.Var(capabilities, "allowed-capability",
		"capability a container may add (CHOWN or CAP_CHOWN); repeat, or comma-separate, for several; giving it replaces the default, "+
			"the Pod Security Standards' baseline set ("+strings.Join(policy.BaselineCapabilities, ",")+"); \"*\" allows every one, ALL included")
	fs.StringVar(&logLevel, "log-level", logLevel, "least severe log level written: debug (one line per CRI call), info, warn or error")
	fs.StringVar(&cfg.LogFormat, "log-format", "json", `log encoding: "json" or "console"`)
	fs.StringVar(&preload, "fake-preload-images", "",
		"comma-separated image references the fake backend holds from the start, as if pulled")
	fakeCgroupDriver := fs.String("fake-cgroup-driver", "cgroupfs", "the cgroup driver the fake backend reports in CRI RuntimeConfig: cgroupfs or systemd (it makes no cgroups)")
	fs.BoolVar(&cfg.ShowVersion, "version", false, "print the version and exit")
	cfg.Tracing.AddFlags(fs)

	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	s.SocketMode = os.FileMode(mode)
	s.Policy.AllowedHostPathPrefixes = hostPaths.values
	s.Policy.AllowedCapabilities = capabilities.values
	for _, ref := range strings.Split(preload, ",") {
		if ref = strings.TrimSpace(ref); ref != "" {
			s.FakePreloadImages = append(s.FakePreloadImages, ref)
		}
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(logLevel)); err != nil {
		return Config{}, fmt.Errorf("--log-level: %w", err)
	}
	switch cfg.LogFormat {
	case "json", "console":
	default:
		return Config{}, fmt.Errorf(`--log-format %q: want "json" or "console"`, cfg.LogFormat)
	}
	switch s.Backend {
	case "fake", "cri":
	default:
		return Config{}, fmt.Errorf(`--backend %q: want "fake" or "cri"`, s.Backend)
	}
	if s.Profiling && s.MetricsAddr == "" {
		return Config{}, fmt.Errorf("--profiling needs --metrics-addr: profiles are served on the metrics server")
	}
	if s.StreamingBaseURL != "" && s.StreamingAddr == "" {
		return Config{}, fmt.Errorf("--streaming-base-url needs --streaming-addr")
	}
	if s.Backend != "fake" && len(s.FakePreloadImages) > 0 {
		return Config{}, fmt.Errorf("--fake-preload-images needs --backend=fake")
	}
	switch *fakeCgroupDriver {
	case "cgroupfs":
	case "systemd":
		if s.Backend != "fake" {
			return Config{}, fmt.Errorf("--fake-cgroup-driver needs --backend=fake")
		}
		s.FakeSystemdCgroups = true
	default:
		return Config{}, fmt.Errorf(`--fake-cgroup-driver %q: want "cgroupfs" or "systemd"`, *fakeCgroupDriver)
	}
	if err := s.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Logger builds the zap logger the flags describe, writing to stderr.
func (c Config) Logger() (*zap.Logger, error) {
	zc := zap.NewProductionConfig()
	if c.LogFormat == "console" {
		zc = zap.NewDevelopmentConfig()
	}
	zc.Level = zap.NewAtomicLevelAt(c.LogLevel)
	zc.Sampling = nil // a CRI call log that silently drops lines misleads
	return zc.Build()
}

// octalMode is a file mode flag written in octal, as chmod takes it.
type octalMode os.FileMode

func (m *octalMode) String() string { return fmt.Sprintf("%#o", uint32(*m)) }

func (m *octalMode) Set(v string) error {
	n, err := strconv.ParseUint(v, 8, 32)
	if err != nil {
		return fmt.Errorf("not an octal mode: %q", v)
	}
	if os.FileMode(n)&^os.ModePerm != 0 {
		return fmt.Errorf("mode %q has bits beyond rwxrwxrwx", v)
	}
	*m = octalMode(n)
	return nil
}

// replaceList is a repeatable flag whose first use replaces the default.
type replaceList struct {
	values []string
	set    bool
	// split takes comma-separated values too.
	split bool
}

func (l *replaceList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(l.values, ",")
}

func (l *replaceList) Set(v string) error {
	if !l.set {
		l.values, l.set = nil, true
	}
	if !l.split {
		l.values = append(l.values, v)
		return nil
	}
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			l.values = append(l.values, part)
		}
	}
	return nil
}
