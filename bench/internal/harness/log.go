package harness

import (
	"context"

	"go.uber.org/zap"
)

type loggerKey struct{}

// WithLogger returns ctx carrying l, which the harness logs progress to.
func WithLogger(ctx context.Context, l *zap.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// logFrom returns the context's logger, or a no-op one.
func logFrom(ctx context.Context) *zap.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*zap.Logger); ok {
		return l
	}
	return zap.NewNop()
}
