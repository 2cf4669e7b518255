// Package logctx carries splitctl's zap logger in a context, so library code
// logs without globals; the logger is a no-op unless -v asks for it.
package logctx

import (
	"context"

	"go.uber.org/zap"
)

type key struct{}

// With returns ctx carrying l.
func With(ctx context.Context, l *zap.Logger) context.Context {
	return context.WithValue(ctx, key{}, l)
}

// From returns ctx's logger, or a no-op logger.
func From(ctx context.Context) *zap.Logger {
	if l, ok := ctx.Value(key{}).(*zap.Logger); ok && l != nil {
		return l
	}
	return zap.NewNop()
}
