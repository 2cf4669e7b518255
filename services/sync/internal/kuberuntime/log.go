package kuberuntime

import (
	"context"

	"go.uber.org/zap"
)

// loggerKey is the context key of the logger.
//
// TODO(lead): move to a shared services/sync/internal/log package once one
// exists, so every sync package reads the same key.
type loggerKey struct{}

// WithLogger returns ctx carrying logger, for the functions of this package
// to log through.
func WithLogger(ctx context.Context, logger *zap.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, logger)
}

// loggerFrom returns the logger carried by ctx, or a no-op logger: decision
// code must never fail for want of a logger.
func loggerFrom(ctx context.Context) *zap.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*zap.Logger); ok && l != nil {
		return l
	}
	return zap.NewNop()
}
