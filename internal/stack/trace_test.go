package stack

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/splitlet/splitlet/internal/tracing"
	"github.com/splitlet/splitlet/internal/tracing/tracetest"
	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// The gateway's server span of the sandbox's creation, as otelgrpc names it.
const runPodSandboxSpan = "runtime.v1.RuntimeService/RunPodSandbox"

// TestPodStartTraceAcrossProcesses starts the three processes exporting to
// an in-process OTLP receiver, applies one pod, and checks that its start
// is one connected trace: sync's syncPod root, admission's Admit and the
// gateway's RunPodSandbox under one trace ID, every span's parent present.
func TestPodStartTraceAcrossProcesses(t *testing.T) {
	r, err := tracetest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	// Each process sends its spans every 100 ms instead of every 5 s.
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	endpoint := "--tracing-endpoint=" + r.Addr()
	s := startStack(t, Config{GatewayArgs: []string{endpoint}, AdmissionArgs: []string{endpoint}, SyncArgs: []string{endpoint}})

	const pod = "traced"
	client := s.PodService()
	manifest := "apiVersion: v1\nkind: Pod\nmetadata: {name: " + pod + ", namespace: default}\n" +
		"spec:\n  containers: [{name: app, image: busybox:1.36}]\n"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := client.Apply(ctx, connect.NewRequest(&podv1.ApplyRequest{Manifest: manifest})); err != nil {
		t.Fatalf("Apply: %v", err)
	}

	// The root ends last, once the first sync is done; wait until it and
	// the other two processes' spans of its trace have arrived.
	var trace []tracetest.Span
	spans, err := r.WaitFor(ctx, func(spans []tracetest.Span) bool {
		root := startRoot(spans, pod)
		if root == nil {
			return false
		}
		trace = tracetest.Trace(spans, root.TraceID)
		return hasSpan(trace, tracing.ServiceAdmission, "Admit") && hasSpan(trace, tracing.ServiceGateway, runPodSandboxSpan)
	})
	if err != nil {
		t.Fatalf("no connected pod-start trace before the deadline (%v); received %d spans:\n%s", err, len(spans), describe(spans))
	}

	services := map[string]bool{}
	for _, sp := range trace {
		services[sp.Service] = true
	}
	for _, svc := range []string{tracing.ServiceSync, tracing.ServiceAdmission, tracing.ServiceGateway} {
		if !services[svc] {
			t.Errorf("no span of %s in the trace", svc)
		}
	}
	if missing := tracetest.MissingParents(trace); len(missing) > 0 {
		t.Errorf("spans whose parent is not in the trace:\n%s\ntrace:\n%s", describe(missing), describe(trace))
	}
	var roots []string
	for _, sp := range trace {
		if sp.ParentID == "" {
			roots = append(roots, sp.Service+" "+sp.Name)
		}
	}
	if len(roots) != 1 || roots[0] != tracing.ServiceSync+" syncPod" {
		t.Errorf("roots %v, want sync's syncPod alone", roots)
	}
	for _, name := range []string{"canAdmitPod", "computePodActions", "createPodSandbox", "startContainer", "createContainer"} {
		if !hasSpan(trace, tracing.ServiceSync, name) {
			t.Errorf("sync's %s span is not in the trace:\n%s", name, describe(trace))
		}
	}
}

// startRoot is the root syncPod span of pod, or nil.
func startRoot(spans []tracetest.Span, pod string) *tracetest.Span {
	for i, sp := range spans {
		if sp.Service == tracing.ServiceSync && sp.Name == "syncPod" && sp.ParentID == "" && sp.Attrs["k8s.pod.name"] == pod {
			return &spans[i]
		}
	}
	return nil
}

func hasSpan(spans []tracetest.Span, service, name string) bool {
	return slices.ContainsFunc(spans, func(sp tracetest.Span) bool { return sp.Service == service && sp.Name == name })
}

func describe(spans []tracetest.Span) string {
	var b strings.Builder
	for _, sp := range spans {
		b.WriteString("  " + sp.TraceID[:8] + " " + sp.SpanID + " <- " + sp.ParentID + " " + sp.Service + " " + sp.Name + "\n")
	}
	return b.String()
}
