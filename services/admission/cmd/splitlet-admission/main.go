// Command splitlet-admission is splitlet's admission process: it answers
// sync's AdmissionService.Admit with the kubelet's admission rules (eviction,
// predicates, critical-pod preemption) and the configured plugins, and
// streams the eviction manager's evictions to sync.
//
//	splitlet-admission --config /etc/splitlet/admission.yaml
//
// It listens on 127.0.0.1:7444 by default (--listen); gRPC, gRPC-Web and
// Connect clients, gRPC health and Prometheus /metrics share that port, and
// with --profiling (or profiling: true) Go's pprof handlers under
// /debug/pprof/ do too.
// admission.example.yaml beside this file shows every setting. SIGTERM or
// SIGINT drains (health NOT_SERVING, WatchEvictions streams end with
// Unavailable) and stops. Exit status: 0 after a clean stop, 2 for a bad
// command line or configuration, 1 when serving fails.
package main

import (
	"context"
	"os"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/procmain"
	"github.com/splitlet/splitlet/internal/tracing"
	"github.com/splitlet/splitlet/services/admission/internal/config"
	"github.com/splitlet/splitlet/services/admission/internal/server"
	"github.com/splitlet/splitlet/services/admission/plugin/gctune"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	gctune.Apply()
	os.Exit(procmain.Main(procmain.Process{Name: tracing.ServiceAdmission}, parse))
}

func parse() (procmain.Setup, error) {
	cfg, err := config.Load(os.Args[1:], os.Stderr)
	if err != nil {
		return procmain.Setup{}, err
	}
	return procmain.Setup{
		Logger:  cfg.Logger,
		Tracing: cfg.Tracing,
		Started: []zap.Field{zap.String("version", version), zap.String("listen", cfg.Listen.Address)},
		Run:     func(ctx context.Context) error { return server.Run(ctx, cfg) },
	}, nil
}
