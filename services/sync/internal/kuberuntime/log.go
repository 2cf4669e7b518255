package kuberuntime

import (
	"context"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/logctx"
)

// loggerFrom returns the logger carried by ctx (logctx), or a no-op logger:
// decision code must never fail for want of a logger.
func loggerFrom(ctx context.Context) *zap.Logger { return logctx.From(ctx) }
