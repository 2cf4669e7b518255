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
	"syscall"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/services/sync/internal/config"
	"github.com/splitlet/splitlet/services/sync/internal/daemon"
	"github.com/splitlet/splitlet/services/sync/internal/logctx"
)

func main() { os.Exit(run()) }

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
	defer log.Sync()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	log.Info("starting splitlet-sync", zap.String("node", cfg.NodeName), zap.String("runtime", cfg.RuntimeEndpoint))
	if err := daemon.Run(logctx.With(ctx, log), cfg); err != nil {
		log.Error("splitlet-sync failed", zap.Error(err))
		return 1
	}
	return 0
}
