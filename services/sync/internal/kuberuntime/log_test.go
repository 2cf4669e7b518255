package kuberuntime

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/container"
)

func TestDecisionsLogThroughContextLogger(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	ctx := logctx.With(context.Background(), zap.New(core))
	pod := makeTestPod()

	podSandboxChanged(ctx, pod, &container.PodStatus{})

	entries := logs.FilterMessage("no sandbox for pod, need to start a new one").All()
	if len(entries) != 1 {
		t.Fatalf("got %d matching log entries, want 1 (all: %v)", len(entries), logs.All())
	}
	if got := entries[0].ContextMap()["pod"]; got != "default/web" {
		t.Errorf("pod field = %v, want default/web", got)
	}
}

func TestLoggerFromEmptyContext(t *testing.T) {
	if loggerFrom(context.Background()) == nil {
		t.Fatal("loggerFrom returned nil for a context without logger")
	}
	if loggerFrom(logctx.With(context.Background(), nil)) == nil {
		t.Fatal("loggerFrom returned nil for a context carrying a nil logger")
	}
}
