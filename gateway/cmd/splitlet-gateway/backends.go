package main

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/gateway/backend"
	"github.com/splitlet/splitlet/gateway/backend/cri"
	"github.com/splitlet/splitlet/gateway/backend/fake"
	"github.com/splitlet/splitlet/gateway/server"
	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/tracing"
)

// newFakeBackend is the in-memory runtime, preloaded with
// --fake-preload-images, on the cgroup driver of --fake-cgroup-driver.
func newFakeBackend(_ context.Context, cfg server.Config, log *zap.Logger) (backend.Runtime, error) {
	rt := fake.New(fake.Options{Logger: log, LoggerFromContext: logctx.Lookup, SystemdCgroups: cfg.FakeSystemdCgroups})
	if err := rt.Preload(cfg.FakePreloadImages...); err != nil {
		rt.Close()
		return nil, fmt.Errorf("preload images: %w", err)
	}
	return rt, nil
}

// newCRIBackend forwards to --runtime-endpoint, carrying each call's trace
// context on when tracing is on.
func newCRIBackend(ctx context.Context, cfg server.Config, _ *zap.Logger) (backend.Runtime, error) {
	return cri.New(ctx, cfg.RuntimeEndpoint, cri.Options{DialOptions: tracing.GRPCDialOptions()})
}
