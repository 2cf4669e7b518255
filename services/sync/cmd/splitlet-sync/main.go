// Command splitlet-sync is splitlet's pod lifecycle process: pod sources
// (manifest directory, PodService API), pod workers and the sync loop,
// driving the runtime through splitlet-gateway's CRI socket.
package main

import (
	"context"
	"os"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/procmain"
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
	os.Exit(procmain.Main(procmain.Process{Name: tracing.ServiceSync, GCPercent: defaultGCPercent}, parse))
}

func parse() (procmain.Setup, error) {
	cfg, err := config.Parse(os.Args[1:], os.Stderr)
	if err != nil {
		return procmain.Setup{}, err
	}
	return procmain.Setup{
		Logger:  cfg.Logger,
		Tracing: cfg.Tracing,
		Started: []zap.Field{zap.String("node", cfg.NodeName), zap.String("runtime", cfg.RuntimeEndpoint)},
		Run:     func(ctx context.Context) error { return daemon.Run(ctx, cfg) },
	}, nil
}
