package tracing

import (
	"context"
	"flag"
	"io"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/splitlet/splitlet/internal/tracing/tracetest"
)

// clearEnv unsets the variables that would turn tracing on from outside.
func clearEnv(t *testing.T) {
	for _, k := range []string{envEndpoint, envTracesEndpoint, envSampler, envSDKDisabled} {
		t.Setenv(k, "")
	}
}

// resetGlobals puts OpenTelemetry's globals and the helpers' switch back as
// a process starts, once the test is over.
func resetGlobals(t *testing.T) {
	t.Cleanup(func() {
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator())
		enabled.Store(false)
	})
}

func parse(t *testing.T, args ...string) Config {
	t.Helper()
	var c Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOffCreatesNoExporter(t *testing.T) {
	clearEnv(t)
	resetGlobals(t)
	for _, tc := range []struct {
		desc string
		args []string
		env  map[string]string
	}{
		{desc: "no flag, no variable"},
		{desc: "a sampling rate alone", args: []string{"--tracing-sampling-rate=0.5"}},
		{desc: "OTEL_SDK_DISABLED wins over the endpoint", args: []string{"--tracing-endpoint=127.0.0.1:4317"},
			env: map[string]string{envSDKDisabled: "true"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			before := otel.GetTracerProvider()
			tr, err := Setup(context.Background(), ServiceSync, parse(t, tc.args...))
			if err != nil {
				t.Fatal(err)
			}
			if tr.Enabled() || tr.provider != nil {
				t.Fatal("tracing is on: an exporter and a provider were created")
			}
			if otel.GetTracerProvider() != before {
				t.Error("the global tracer provider changed")
			}
			if _, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); ok {
				t.Error("the global tracer provider is the SDK's")
			}
			if n := len(GRPCServerOptions()) + len(GRPCDialOptions()) + len(ConnectHandlerOptions()) + len(ConnectClientOptions()); n != 0 {
				t.Errorf("%d instrumentation options with tracing off, want none", n)
			}
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestSamplingRateFlag(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		arg     string
		wantErr bool
	}{
		{desc: "a fraction", arg: "0.25"},
		{desc: "zero samples no new trace", arg: "0"},
		{desc: "above one", arg: "1.5", wantErr: true},
		{desc: "not a number", arg: "half", wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var c Config
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c.AddFlags(fs)
			err := fs.Parse([]string{"--tracing-sampling-rate=" + tc.arg})
			if (err != nil) != tc.wantErr {
				t.Fatalf("parse %q: %v, want error %v", tc.arg, err, tc.wantErr)
			}
			if err == nil && !c.samplingSet {
				t.Error("the flag was given but not recorded as set")
			}
		})
	}
}

func TestOnExportsWithServiceName(t *testing.T) {
	clearEnv(t)
	resetGlobals(t)
	r, err := tracetest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	tr, err := Setup(context.Background(), ServiceGateway, parse(t, "--tracing-endpoint="+r.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Enabled() || len(GRPCServerOptions()) != 1 || len(ConnectClientOptions()) != 1 {
		t.Fatal("tracing on, but no instrumentation options")
	}
	_, span := Tracer("test").Start(context.Background(), "syncPod")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil { // flushes the batch
		t.Fatal(err)
	}
	spans := r.Spans()
	if len(spans) != 1 || spans[0].Name != "syncPod" || spans[0].Service != ServiceGateway {
		t.Errorf("received %+v, want one syncPod span from %s", spans, ServiceGateway)
	}
}

func TestSamplerStartsTracesAtLifecycleSteps(t *testing.T) {
	sampler := sdktrace.ParentBased(rootSampler{sdktrace.TraceIDRatioBased(1)})
	remote := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled, Remote: true,
	}))
	for _, tc := range []struct {
		desc string
		ctx  context.Context
		kind trace.SpanKind
		want sdktrace.SamplingDecision
	}{
		{desc: "a pod worker step starts a trace", ctx: context.Background(), kind: trace.SpanKindInternal, want: sdktrace.RecordAndSample},
		{desc: "an RPC without a caller's trace starts none", ctx: context.Background(), kind: trace.SpanKindClient, want: sdktrace.Drop},
		{desc: "a call received without trace context starts none", ctx: context.Background(), kind: trace.SpanKindServer, want: sdktrace.Drop},
		{desc: "a call received in a sampled trace continues it", ctx: remote, kind: trace.SpanKindServer, want: sdktrace.RecordAndSample},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := sampler.ShouldSample(sdktrace.SamplingParameters{ParentContext: tc.ctx, TraceID: trace.TraceID{2}, Name: "x", Kind: tc.kind})
			if got.Decision != tc.want {
				t.Errorf("decision %v, want %v", got.Decision, tc.want)
			}
		})
	}
}

// BenchmarkSpanOff is what a span costs with tracing off: a pod start
// makes about ten (syncPod, canAdmitPod, computePodActions, ...).
func BenchmarkSpanOff(b *testing.B) {
	tracer := Tracer("bench")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ctx, span := tracer.Start(ctx, "syncPod", PodAttributes("default", "web", "0b7f5c3e-uid"))
		_, child := tracer.Start(ctx, "startContainer", trace.WithAttributes(ContainerAttribute("app")))
		child.End()
		span.End()
	}
}
