// Command splitlet-sync is splitlet's pod lifecycle process: pod sources
// (manifest directory, PodService API), pod workers and the sync loop,
// driving the runtime through splitlet-gateway's CRI socket.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/tracing"
	"github.com/splitlet/splitlet/services/sync/internal/config"
	"github.com/splitlet/splitlet/services/sync/internal/daemon"
)

// defaultGCPercent is the garbage collector's target (GOGC) when the
// environment sets none. A pod burst allocates fast over a small live heap,
// so at Go's default of 100 the collector took 10-12% of the sync's CPU in
// the 1000-pod bench; at 200 the burst's CPU fell by about a sixth, for a
// few MiB more RSS at 110 pods (BENCHMARKS.md). GOGC still overrides it.
const defaultGCPercent = 200

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	os.Exit(run())
}

func run() int {
	cfg, err := config.Parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "splitlet-sync:", err)
		return 2
	}
	log, err := cfg.Logger()
	if err != nil {
		fmt.Fprintln(os.Stderr, "splitlet-sync: logger:", err)
		return 2
	}
	logctx.RouteKlog(log)
	defer log.Sync()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("starting splitlet-sync", zap.String("node", cfg.NodeName), zap.String("runtime", cfg.RuntimeEndpoint))
	tr, err := tracing.Setup(ctx, tracing.ServiceSync, cfg.Tracing)
	if err != nil {
		log.Error("tracing", zap.Error(err))
		return 1
	}
	defer shutdownTracing(tr, log)
	if err := daemon.Run(logctx.With(ctx, log), cfg); err != nil {
		log.Error("splitlet-sync failed", zap.Error(err))
		return 1
	}
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
