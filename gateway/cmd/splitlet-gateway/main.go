// Command splitlet-gateway is splitlet's runtime-gateway: the one process that
// opens the container runtime's socket, serving CRI to sync and admission (and
// crictl, critest) with validation, policy, deadlines, logs and metrics.
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

	"github.com/splitlet/splitlet/gateway/internal/config"
	"github.com/splitlet/splitlet/gateway/server"
	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/tracing"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// backends are the built-in runtime backends, selected with --backend.
var backends = server.Backends{
	"cri":  newCRIBackend,
	"fake": newFakeBackend,
}

// defaultGCPercent is the garbage collector's target (GOGC) when the
// environment sets none. A pod burst allocates fast over a small live heap,
// so at Go's default of 100 the collector took 10-12% of the gateway's CPU in
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
		fmt.Fprintln(os.Stderr, "splitlet-gateway:", err)
		return 2
	}
	if cfg.ShowVersion {
		fmt.Println("splitlet-gateway", version)
		return 0
	}
	log, err := cfg.Logger()
	if err != nil {
		fmt.Fprintln(os.Stderr, "splitlet-gateway: logger:", err)
		return 2
	}
	logctx.RouteKlog(log)
	defer log.Sync()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("starting splitlet-gateway", zap.String("version", version), zap.String("backend", cfg.Server.Backend))
	tr, err := tracing.Setup(ctx, tracing.ServiceGateway, cfg.Tracing)
	if err != nil {
		log.Error("tracing", zap.Error(err))
		return 1
	}
	defer shutdownTracing(tr, log)
	// Every CRI call continues its caller's trace (sync's, admission's);
	// the cri backend's calls carry it on to the runtime (backends.go).
	if err := server.Run(logctx.With(ctx, log), cfg.Server, backends, server.WithGRPCOptions(tracing.GRPCServerOptions()...)); err != nil {
		log.Error("gateway failed", zap.Error(err))
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
