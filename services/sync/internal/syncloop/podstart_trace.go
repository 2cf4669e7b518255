package syncloop

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/internal/tracing"
)

// tracer starts the sync loop's spans (a no-op without tracing).
var tracer = tracing.Tracer("github.com/splitlet/splitlet/services/sync/syncloop")

// A pod's start is one trace whose root is its first syncPod span. The
// span begins here, before admission, so that canAdmitPod and the
// admission service's Admit are in the trace; startPod hands it to the pod
// worker, whose first sync continues and ends it (worker.UpdatePodOptions).
// A rejected pod's span ends at once. Without tracing no span is valid and
// nothing is kept.

// startContext returns ctx carrying pod's start span, begun on first use.
func (k *Kubelet) startContext(ctx context.Context, pod *v1.Pod) context.Context {
	k.mu.Lock()
	span, ok := k.startSpans[pod.UID]
	k.mu.Unlock()
	if !ok {
		_, span = tracer.Start(ctx, "syncPod", trace.WithNewRoot(),
			tracing.PodAttributes(pod.Namespace, pod.Name, string(pod.UID)))
		if !span.SpanContext().IsValid() {
			return ctx
		}
		k.mu.Lock()
		k.startSpans[pod.UID] = span
		k.mu.Unlock()
	}
	return trace.ContextWithSpan(ctx, span)
}

// admitPodsSpan starts the span of one batched admission call. A call
// carries one trace context, so it goes in the first pod's trace and
// links the others' start spans.
func (k *Kubelet) admitPodsSpan(ctx context.Context, pods []*v1.Pod) (context.Context, trace.Span) {
	first := k.startContext(ctx, pods[0])
	var links []trace.Link
	for _, pod := range pods[1:] {
		if sc := trace.SpanContextFromContext(k.startContext(ctx, pod)); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	return tracer.Start(first, "admitPods", trace.WithLinks(links...))
}

// takeStartSpan hands over pod's start span (nil when there is none).
func (k *Kubelet) takeStartSpan(uid types.UID) trace.Span {
	k.mu.Lock()
	defer k.mu.Unlock()
	span := k.startSpans[uid]
	delete(k.startSpans, uid)
	return span
}

// endStartSpan ends the start span of a pod that will not start.
func (k *Kubelet) endStartSpan(uid types.UID, why string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.endStartSpanLocked(uid, why)
}

func (k *Kubelet) endStartSpanLocked(uid types.UID, why string) {
	if span, ok := k.startSpans[uid]; ok {
		span.SetStatus(codes.Error, why)
		span.End()
		delete(k.startSpans, uid)
	}
}
