package server

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"

	"github.com/splitlet/splitlet/gateway/backend"
	"github.com/splitlet/splitlet/internal/logctx"
)

// BackendFactory builds a backend from the configuration. log already names
// the backend.
type BackendFactory func(ctx context.Context, cfg Config, log *zap.Logger) (backend.Runtime, error)

// Backends maps Config.Backend names to factories. The binary's main holds
// the built-in list, so this package does not depend on any backend.
type Backends map[string]BackendFactory

// Run builds the backend cfg.Backend names, serves the gateway until ctx is
// done and closes the backend. The logger comes from ctx (logctx.With);
// opts come after it.
func Run(ctx context.Context, cfg Config, backends Backends, opts ...Option) error {
	log := logctx.From(ctx)
	factory, ok := backends[cfg.Backend]
	if !ok {
		names := make([]string, 0, len(backends))
		for name := range backends {
			names = append(names, name)
		}
		sort.Strings(names)
		return fmt.Errorf("unknown backend %q (want one of %s): %w",
			cfg.Backend, strings.Join(names, ", "), errdefs.ErrInvalidArgument)
	}
	rt, err := factory(ctx, cfg, log.With(zap.String("backend", cfg.Backend)))
	if err != nil {
		return fmt.Errorf("backend %s: %w", cfg.Backend, err)
	}
	defer func() {
		if err := rt.Close(); err != nil {
			log.Warn("close backend", zap.Error(err))
		}
	}()
	srv, err := New(cfg, rt, append([]Option{WithLogger(log)}, opts...)...)
	if err != nil {
		return err
	}
	return srv.Serve(ctx)
}
