// Command splitlet-gateway is splitlet's runtime-gateway: the one process that
// opens the container runtime's socket, serving CRI to sync and admission (and
// crictl, critest) with validation, policy, deadlines, logs and metrics.
package main

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/gateway/internal/config"
	"github.com/splitlet/splitlet/gateway/server"
	"github.com/splitlet/splitlet/internal/procmain"
	"github.com/splitlet/splitlet/internal/tracing"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// backends are the built-in runtime backends, selected with --backend.
var backends = server.Backends{
	"cri":  newCRIBackend,
	"fake": newFakeBackend,
}

func main() {
	os.Exit(procmain.Main(server.Process, parse))
}

func parse() (procmain.Setup, error) {
	cfg, err := config.Parse(os.Args[1:], os.Stderr)
	if err != nil {
		return procmain.Setup{}, err
	}
	if cfg.ShowVersion {
		fmt.Println("splitlet-gateway", version)
		return procmain.Setup{Done: true}, nil
	}
	return procmain.Setup{
		Logger:  cfg.Logger,
		Tracing: cfg.Tracing,
		Started: []zap.Field{zap.String("version", version), zap.String("backend", cfg.Server.Backend)},
		// Every CRI call continues its caller's trace (sync's,
		// admission's); the cri backend's calls carry it on to the
		// runtime (backends.go).
		Run: func(ctx context.Context) error {
			return server.Run(ctx, cfg.Server, backends, server.WithGRPCOptions(tracing.GRPCServerOptions()...))
		},
	}, nil
}
