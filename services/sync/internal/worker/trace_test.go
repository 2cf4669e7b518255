package worker

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	v1 "k8s.io/api/core/v1"
)

// spanHandler records the span each SyncPod runs in.
type spanHandler struct {
	fakeHandler
	mu    sync.Mutex
	spans []trace.SpanContext
}

func (h *spanHandler) SyncPod(ctx context.Context, t UpdateType, pod *v1.Pod) (bool, error) {
	h.mu.Lock()
	h.spans = append(h.spans, trace.SpanContextFromContext(ctx))
	h.mu.Unlock()
	return h.fakeHandler.SyncPod(ctx, t, pod)
}

// The pod's start span, begun before admission, is the first sync's
// syncPod span and ends with it; a later sync is a trace of its own.
func TestFirstSyncContinuesTheStartSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	otel.SetTracerProvider(tp) // the package's tracer delegates to it
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h := &spanHandler{fakeHandler: fakeHandler{terminated: make(chan struct{})}}
		w := New(ctx, h, time.Minute, time.Minute, nil)
		_, start := tp.Tracer("test").Start(context.Background(), "syncPod")
		w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: pod("v1"), StartSpan: start})
		synctest.Wait()
		passResyncPeriods(1, time.Minute)
		cancel()
		w.Wait()

		h.mu.Lock()
		spans := append([]trace.SpanContext(nil), h.spans...)
		h.mu.Unlock()
		if len(spans) != 2 {
			t.Fatalf("%d syncs, want the first and one resync", len(spans))
		}
		if !spans[0].Equal(start.SpanContext()) {
			t.Errorf("first sync ran in span %v, want the start span %v", spans[0].SpanID(), start.SpanContext().SpanID())
		}
		if spans[1].TraceID() == start.SpanContext().TraceID() {
			t.Error("the resync continued the start's trace, want a trace of its own")
		}
		ended := rec.Ended()
		if len(ended) != 2 || ended[0].SpanContext().SpanID() != start.SpanContext().SpanID() {
			t.Errorf("ended spans %v, want the start span then the resync's", ended)
		}
		for _, s := range ended {
			if s.Name() != "syncPod" {
				t.Errorf("span %q, want syncPod", s.Name())
			}
		}
	})
}
