// Package logctx carries a zap logger in a context.Context, for every
// splitlet process.
//
// A server's interceptors put a logger that already names the call (the
// gateway's RPC, sync's pod, admission's request) into the context; library
// code takes it back out with From instead of holding a global logger, so
// every line a call produces says which call it was.
//
//	ctx = logctx.With(ctx, logger.With(zap.String("method", "RunPodSandbox")))
//	...
//	logctx.From(ctx).Debug("sandbox created", zap.String("id", id))
package logctx

import (
	"context"

	"go.uber.org/zap"
)

type key struct{}

// With returns a copy of ctx carrying l.
func With(ctx context.Context, l *zap.Logger) context.Context {
	return context.WithValue(ctx, key{}, l)
}

// From returns the logger carried by ctx, or a no-op logger when there is none,
// so callers never need a nil check.
func From(ctx context.Context) *zap.Logger {
	if l, ok := ctx.Value(key{}).(*zap.Logger); ok && l != nil {
		return l
	}
	return zap.NewNop()
}

// Lookup returns the logger carried by ctx, or nil when there is none, for
// callers that fall back to a logger of their own (the fake backend's
// Options.LoggerFromContext).
func Lookup(ctx context.Context) *zap.Logger {
	l, _ := ctx.Value(key{}).(*zap.Logger)
	return l
}
