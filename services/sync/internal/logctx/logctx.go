// Package logctx carries splitlet-sync's zap logger in a context, so library
// code logs with the request's or pod's fields without globals.
package logctx

import (
	"context"

	"go.uber.org/zap"
)

type key struct{}

// With returns ctx carrying logger.
func With(ctx context.Context, logger *zap.Logger) context.Context {
	return context.WithValue(ctx, key{}, logger)
}

// From returns the logger in ctx, or a no-op logger.
func From(ctx context.Context) *zap.Logger {
	if l, ok := ctx.Value(key{}).(*zap.Logger); ok && l != nil {
		return l
	}
	return zap.NewNop()
}
