// Package tracing is the OpenTelemetry set-up every splitlet process shares:
// the --tracing-endpoint and --tracing-sampling-rate flags, an OTLP/gRPC
// exporter, W3C trace context, and the gRPC and Connect instrumentation that
// carries it between the processes (sync -> admission, sync -> gateway,
// gateway -> runtime, admission -> plugin).
//
// Tracing is off unless an endpoint is given, by the flag or by the standard
// OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT variables.
// Off, Setup creates no exporter and installs nothing: OpenTelemetry's
// global tracer provider stays its no-op default, and the option helpers
// below return no options, so no RPC pays for a stats handler or an
// interceptor.
//
// Setup installs the tracer provider and the propagator as OpenTelemetry's
// globals, as the SDK intends; spans are then started with Tracer(name), and
// servers and clients take their instrumentation from the helpers:
//
//	var tc tracing.Config
//	tc.AddFlags(fs)
//	...
//	t, err := tracing.Setup(ctx, "splitlet-gateway", tc)
//	defer t.Shutdown(context.Background())
//	srv := grpc.NewServer(tracing.GRPCServerOptions()...)
//	conn, err := grpc.NewClient(target, append(opts, tracing.GRPCDialOptions()...)...)
package tracing

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"connectrpc.com/connect"
	"connectrpc.com/otelconnect"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
)

// Service names, the resource attribute service.name of each process.
const (
	ServiceSync      = "splitlet-sync"
	ServiceAdmission = "splitlet-admission"
	ServiceGateway   = "splitlet-gateway"
)

// DefaultSamplingRate samples every trace that has no sampled parent: an
// endpoint is only set by someone who wants to see traces. Lower it on a
// busy node; a child follows its parent's decision whatever the rate.
const DefaultSamplingRate = 1.0

// Environment variables of the OpenTelemetry specification that Setup
// reads; the exporter reads the rest of OTEL_EXPORTER_OTLP_* itself.
const (
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envSampler        = "OTEL_TRACES_SAMPLER"
	envSDKDisabled    = "OTEL_SDK_DISABLED"
)

// Config is what the flags say.
type Config struct {
	// Endpoint is the OTLP/gRPC collector, host:port (plain text) or a URL
	// (http:// plain, https:// TLS). Empty: the OTEL_* variables decide,
	// and without them tracing is off.
	Endpoint string
	// SamplingRate is the fraction of new traces sampled (parent-based: a
	// call whose caller sampled is sampled). When the flag is not given
	// and OTEL_TRACES_SAMPLER is set, the variable decides.
	SamplingRate float64
	samplingSet  bool
}

// AddFlags registers --tracing-endpoint and --tracing-sampling-rate on fs.
func (c *Config) AddFlags(fs *flag.FlagSet) {
	c.SamplingRate = DefaultSamplingRate
	fs.StringVar(&c.Endpoint, "tracing-endpoint", "",
		"OpenTelemetry collector receiving this process's spans over OTLP/gRPC, host:port (plain text) or an http:// or https:// URL; "+
			"empty: OTEL_EXPORTER_OTLP_ENDPOINT if set, else tracing is off (no exporter, no cost)")
	fs.Func("tracing-sampling-rate",
		"fraction of new traces sampled, 0 to 1; a trace starts at a pod worker's step (syncPod, syncTerminatingPod), and RPCs follow their caller's decision; "+
			"default 1, or OTEL_TRACES_SAMPLER when that is set and this flag is not",
		func(s string) error {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 || v > 1 {
				return fmt.Errorf("want a number from 0 to 1, got %q", s)
			}
			c.SamplingRate, c.samplingSet = v, true
			return nil
		})
}

// Enabled reports whether c, with the environment, turns tracing on.
func (c Config) Enabled() bool {
	if strings.EqualFold(os.Getenv(envSDKDisabled), "true") {
		return false
	}
	return c.Endpoint != "" || os.Getenv(envEndpoint) != "" || os.Getenv(envTracesEndpoint) != ""
}

// enabled is set by Setup when tracing is on; the option helpers read it.
var enabled atomic.Bool

// Tracing is the set-up of one process. The zero value (tracing off) is
// usable.
type Tracing struct {
	provider *sdktrace.TracerProvider // nil when off
}

// Setup turns tracing on for service when c says so: an OTLP/gRPC exporter
// behind a batching span processor, a parent-based sampler, the service
// name (and OTEL_RESOURCE_ATTRIBUTES) as the resource, W3C trace context as
// the propagator. Off, it creates nothing and returns a Tracing whose
// Shutdown does nothing. The exporter connects lazily: a collector that is
// not there loses spans, never blocks the process.
func Setup(ctx context.Context, service string, c Config) (*Tracing, error) {
	if !c.Enabled() {
		return &Tracing{}, nil
	}
	var opts []otlptracegrpc.Option
	switch {
	case strings.Contains(c.Endpoint, "://"):
		opts = append(opts, otlptracegrpc.WithEndpointURL(c.Endpoint))
	case c.Endpoint != "":
		opts = append(opts, otlptracegrpc.WithEndpoint(c.Endpoint), otlptracegrpc.WithInsecure())
	}
	exporter, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(service)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	popts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exporter), sdktrace.WithResource(res)}
	if c.samplingSet || os.Getenv(envSampler) == "" {
		popts = append(popts, sdktrace.WithSampler(sdktrace.ParentBased(rootSampler{sdktrace.TraceIDRatioBased(c.SamplingRate)})))
	}
	t := &Tracing{provider: sdktrace.NewTracerProvider(popts...)}
	otel.SetTracerProvider(t.provider)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	enabled.Store(true)
	return t, nil
}

// rootSampler decides on spans without a parent. Traces start at the steps
// of the pod lifecycle (syncPod, syncTerminatingPod, ...), which are
// internal spans; an RPC with no trace around it (sync's relist, the
// eviction manager's stats, a crictl call) starts none, or every second's
// relist would be a trace of its own. Its server side has no parent either
// and is dropped the same way.
type rootSampler struct{ ratio sdktrace.Sampler }

func (s rootSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Kind == trace.SpanKindServer || p.Kind == trace.SpanKindClient {
		return sdktrace.SamplingResult{Decision: sdktrace.Drop, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
	}
	return s.ratio.ShouldSample(p)
}

func (s rootSampler) Description() string { return "LifecycleRoots{" + s.ratio.Description() + "}" }

// Enabled reports whether t exports spans.
func (t *Tracing) Enabled() bool { return t != nil && t.provider != nil }

// Shutdown exports the spans still buffered and stops the exporter; call
// it once the process's servers have stopped.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Tracer is the named tracer of the global provider: a no-op tracer unless
// Setup turned tracing on.
func Tracer(name string) trace.Tracer { return otel.Tracer(name) }

// PodAttributes name a pod on a span with OpenTelemetry's Kubernetes
// attribute keys.
func PodAttributes(namespace, name, uid string) trace.SpanStartEventOption {
	return trace.WithAttributes(
		semconv.K8SNamespaceName(namespace),
		semconv.K8SPodName(name),
		semconv.K8SPodUID(uid),
	)
}

// ContainerAttribute names a container on a span.
func ContainerAttribute(name string) attribute.KeyValue { return semconv.K8SContainerName(name) }

// GRPCServerOptions are the options of a gRPC server whose calls continue
// their caller's trace: otelgrpc's server stats handler. None when tracing
// is off.
func GRPCServerOptions() []grpc.ServerOption {
	if !enabled.Load() {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler())}
}

// GRPCDialOptions are the options of a gRPC client whose calls carry the
// caller's trace context: otelgrpc's client stats handler. None when
// tracing is off.
func GRPCDialOptions() []grpc.DialOption {
	if !enabled.Load() {
		return nil
	}
	return []grpc.DialOption{grpc.WithStatsHandler(otelgrpc.NewClientHandler())}
}

// ConnectHandlerOptions are the options of a Connect handler whose calls
// continue their caller's trace. otelconnect would otherwise start a new
// trace per call and only link the caller's (WithTrustRemote); its metrics
// are left out, Prometheus has them already. None when tracing is off.
func ConnectHandlerOptions() []connect.HandlerOption {
	if i := connectInterceptor(otelconnect.WithTrustRemote()); i != nil {
		return []connect.HandlerOption{connect.WithInterceptors(i)}
	}
	return nil
}

// ConnectClientOptions are the options of a Connect client whose calls
// carry the caller's trace context. None when tracing is off.
func ConnectClientOptions() []connect.ClientOption {
	if i := connectInterceptor(); i != nil {
		return []connect.ClientOption{connect.WithInterceptors(i)}
	}
	return nil
}

func connectInterceptor(opts ...otelconnect.Option) *otelconnect.Interceptor {
	if !enabled.Load() {
		return nil
	}
	// Only the set-up of metrics can fail, and metrics are off; were it
	// to fail anyway, calls would go untraced rather than the process down.
	i, err := otelconnect.NewInterceptor(append(opts, otelconnect.WithoutMetrics())...)
	if err != nil {
		return nil
	}
	return i
}
