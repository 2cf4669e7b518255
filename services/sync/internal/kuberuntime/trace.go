package kuberuntime

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/splitlet/splitlet/internal/tracing"
)

// tracer starts the spans of SyncPod's steps, children of the pod
// worker's syncPod or syncTerminatingPod span (no-ops without tracing).
var tracer = tracing.Tracer("github.com/splitlet/splitlet/services/sync/kuberuntime")

// startStep starts the span of one step, named after the kubelet's
// function; endStep ends it with the step's error.
func startStep(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

func endStep(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
