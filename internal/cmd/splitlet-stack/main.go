// Command splitlet-stack is `make run` / `make stop`: the local stack of
// splitlet-gateway, splitlet-admission and splitlet-sync with the example
// pods (package localstack).
//
//	splitlet-stack [flags] run     start, apply examples/, stay until Ctrl-C (restarting a process that dies)
//	splitlet-stack [flags] stop    stop a stack started with --detach
//	splitlet-stack [flags] status  which processes run, and their addresses
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/splitlet/splitlet/internal/localstack"
)

func main() {
	cfg, cmd, err := parse(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "splitlet-stack:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch cmd {
	case "run":
		err = localstack.Run(ctx, cfg)
	case "stop":
		err = localstack.Stop(cfg)
	case "status":
		err = localstack.Status(cfg)
	}
	_ = cfg.Logger.Sync()
	if err != nil {
		if !errors.Is(err, localstack.ErrSmoke) {
			fmt.Fprintln(os.Stderr, "splitlet-stack:", err)
		}
		os.Exit(1)
	}
}

// firstIP is the machine's first non-loopback IPv4 address, as
// `hostname -I` would list it first; "" when it has none.
func firstIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

func parse(args []string) (localstack.Config, string, error) {
	var cfg localstack.Config
	self, _ := os.Executable()
	fs := flag.NewFlagSet("splitlet-stack", flag.ContinueOnError)
	fs.StringVar(&cfg.BinDir, "bin", filepath.Dir(self), "directory of the splitlet binaries and splitctl (default: this binary's)")
	fs.StringVar(&cfg.Dir, "dir", "_out/run", "state, sockets and logs")
	fs.StringVar(&cfg.ExamplesDir, "examples", "examples", "pods to apply (*.yaml) and static pods (static/*.yaml)")
	fs.StringVar(&cfg.RuntimeEndpoint, "runtime-endpoint", "", "CRI endpoint for the gateway's cri backend (unix:///run/containerd/containerd.sock); empty runs the fake backend")
	fs.StringVar(&cfg.SyncAddr, "sync-addr", "", "sync's PodService address, host:port or unix:///path (default: unix://DIR/sync.sock)")
	fs.StringVar(&cfg.AdmissionAddr, "admission-addr", "", "admission's address, host:port or unix:///path (default: unix://DIR/admission.sock)")
	fs.StringVar(&cfg.GatewayMetricsAddr, "gateway-metrics-addr", "127.0.0.1:9101", "the gateway's /metrics and /healthz address")
	fs.StringVar(&cfg.NodeName, "node-name", "", "node name given to admission and sync (default: the hostname)")
	fs.StringVar(&cfg.NodeIP, "node-ip", firstIP(), "the node's IP, which host-network pods report (default: the first non-loopback IPv4 address)")
	fs.DurationVar(&cfg.Timeout, "timeout", 120*time.Second, "how long to wait for the example pods")
	fs.BoolVar(&cfg.Detach, "detach", false, "leave the stack running and return (stop it with `stop`)")
	fs.BoolVar(&cfg.Smoke, "smoke", false, "CI mode: start, apply, wait Running, print the pods, stop; exit 0 only if every step worked")
	fs.StringVar(&cfg.CrictlPath, "crictl", "", "crictl binary shown in the hints")
	verbose := fs.Bool("v", false, "log every step of the launcher")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: splitlet-stack [flags] run|stop|status\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, "", err
	}
	cmd := "run"
	if fs.NArg() > 1 {
		return cfg, "", fmt.Errorf("one command expected, got %v", fs.Args())
	}
	if fs.NArg() == 1 {
		cmd = fs.Arg(0)
	}
	if cmd != "run" && cmd != "stop" && cmd != "status" {
		return cfg, "", fmt.Errorf("unknown command %q: run, stop or status", cmd)
	}
	if cfg.NodeName == "" {
		host, err := os.Hostname()
		if err != nil {
			return cfg, "", fmt.Errorf("--node-name: %w", err)
		}
		cfg.NodeName = host
	}
	abs := func(p *string) {
		if a, err := filepath.Abs(*p); err == nil {
			*p = a
		}
	}
	abs(&cfg.Dir)
	abs(&cfg.BinDir)
	abs(&cfg.ExamplesDir)
	// The APIs listen where they do by default, on unix sockets (here in
	// DIR); a DIR too deep for a socket's 108 bytes takes the ports the
	// docs use, which need the stack's token as well.
	for _, a := range []struct {
		addr *string
		name string
		port string
	}{{&cfg.SyncAddr, "sync.sock", "7443"}, {&cfg.AdmissionAddr, "admission.sock", "7444"}} {
		if *a.addr != "" {
			continue
		}
		if sock := filepath.Join(cfg.Dir, a.name); len(sock) < 100 {
			*a.addr = "unix://" + sock
		} else {
			*a.addr = "127.0.0.1:" + a.port
		}
	}
	cfg.Out = os.Stdout
	level := zapcore.InfoLevel
	if *verbose {
		level = zapcore.DebugLevel
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.TimeKey, enc.CallerKey = "", ""
	enc.NameKey = "N"
	cfg.Logger = zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(os.Stderr), level)).Named("run")
	return cfg, cmd, nil
}
