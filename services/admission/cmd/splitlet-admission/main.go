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
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/tracing"
	"github.com/splitlet/splitlet/services/admission/internal/config"
	"github.com/splitlet/splitlet/services/admission/internal/server"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() { os.Exit(run()) }

func run() int {
	cfg, err := config.Load(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "splitlet-admission:", err)
		return 2
	}
	log, err := cfg.Logger()
	if err != nil {
		fmt.Fprintln(os.Stderr, "splitlet-admission: logger:", err)
		return 2
	}
	logctx.RouteKlog(log)
	defer log.Sync()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("starting splitlet-admission", zap.String("version", version), zap.String("listen", cfg.Listen.Address))
	tr, err := tracing.Setup(ctx, tracing.ServiceAdmission, cfg.Tracing)
	if err != nil {
		log.Error("tracing", zap.Error(err))
		return 1
	}
	defer shutdownTracing(tr, log)
	if err := server.Run(logctx.With(ctx, log), cfg); err != nil {
		log.Error("admission failed", zap.Error(err))
		return 1
	}
	log.Info("stopped")
	return 0
}

// shutdownTracing exports the spans still buffered, within a bound: a
// collector that is gone must not hold up the exit.
func shutdownTracing(tr *tracing.Tracing, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		log.Warn("tracing shutdown", zap.Error(err))
	}
}
