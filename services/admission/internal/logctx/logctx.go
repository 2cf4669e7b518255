// Package logctx carries a zap logger in a context.Context for the admission
// service, so handlers log through the logger of the call that reached them
// instead of a global one.
//
//	ctx = logctx.With(ctx, logger.With(zap.String("pod", "default/web")))
//	logctx.From(ctx).Info("pod rejected", zap.String("reason", r.Reason))
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

// From returns the logger carried by ctx, or a no-op logger when there is
// none, so callers never need a nil check.
func From(ctx context.Context) *zap.Logger {
	if l, ok := ctx.Value(key{}).(*zap.Logger); ok && l != nil {
		return l
	}
	return zap.NewNop()
}
