package prober

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/tracing"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/prober/probe"
)

// Recorder records events about a pod's container. sync's events.Recorder
// satisfies it. Implementations must be safe for concurrent use.
type Recorder interface {
	EventfContainer(pod *v1.Pod, containerName, eventType, reason, messageFmt string, args ...any)
}

// Event reasons, the kubelet's values (events.ContainerUnhealthy and
// events.ContainerProbeWarning).
const (
	ReasonUnhealthy    = "Unhealthy"
	ReasonProbeWarning = "ProbeWarning"
)

// maxProbeRetries is how many times one probe run is attempted when the
// attempt errors (not when it fails), as the kubelet's maxProbeRetries.
const maxProbeRetries = 3

// prober runs one probe of a container and turns its outcome into a result
// and an event. It matches the kubelet's prober.prober.
type prober struct {
	execer    probe.Execer
	recorder  Recorder
	transport http.RoundTripper
	timeUnit  time.Duration
}

// tracer starts the probe spans (no-ops without tracing).
var tracer = tracing.Tracer("github.com/splitlet/splitlet/services/sync/prober")

// probe runs the container's probe of type pt and records an event for
// anything but a plain success. Matches the kubelet's prober.probe: a
// warning counts as success; an error (the probe could not be run) yields
// a failure together with the error, which the worker discards.
func (pb *prober) probe(ctx context.Context, pt probeType, pod *v1.Pod, status v1.PodStatus, c *v1.Container, id container.ContainerID) (kuberuntime.ProbeResult, error) {
	spec := pt.spec(c)
	if spec == nil {
		return kuberuntime.ProbeSuccess, nil
	}
	log := logctx.From(ctx).WithLazy(zap.String("probeType", pt.String()), zap.String("pod", pod.Namespace+"/"+pod.Name), zap.String("container", c.Name))

	// Each probe is a short trace of its own (an exec probe's ExecSync
	// goes to the gateway in it).
	ctx, span := tracer.Start(ctx, "probe", trace.WithNewRoot(), tracing.PodAttributes(pod.Namespace, pod.Name, string(pod.UID)),
		trace.WithAttributes(tracing.ContainerAttribute(c.Name), attribute.String("splitlet.probe.type", pt.String())))
	defer span.End()
	res, output, err := pb.runProbeWithRetries(ctx, spec, pod, status, c, id, maxProbeRetries)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("splitlet.probe.result", string(res)))
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		log.Debug("probe errored", zap.String("result", string(res)), zap.Error(err))
		pb.event(pod, c, ReasonUnhealthy, "%s probe errored and resulted in %s state: %s", pt, res, err)
		return kuberuntime.ProbeFailure, err
	}
	switch res {
	case probe.Success:
		return kuberuntime.ProbeSuccess, nil
	case probe.Warning:
		pb.event(pod, c, ReasonProbeWarning, "%s probe warning: %s", pt, output)
		return kuberuntime.ProbeSuccess, nil
	case probe.Failure:
		log.Debug("probe failed", zap.String("output", output))
		pb.event(pod, c, ReasonUnhealthy, "%s probe failed: %s", pt, output)
		return kuberuntime.ProbeFailure, nil
	default:
		return kuberuntime.ProbeFailure, nil
	}
}

func (pb *prober) event(pod *v1.Pod, c *v1.Container, reason, format string, args ...any) {
	if pb.recorder != nil {
		pb.recorder.EventfContainer(pod, c.Name, v1.EventTypeWarning, reason, format, args...)
	}
}

// runProbeWithRetries runs the probe until an attempt does not error, at
// most retries times, and returns the last attempt. Matches the kubelet's
// runProbeWithRetries (newer versions retry on errors only; a failure is
// an answer).
func (pb *prober) runProbeWithRetries(ctx context.Context, spec *v1.Probe, pod *v1.Pod, status v1.PodStatus, c *v1.Container, id container.ContainerID, retries int) (probe.Result, string, error) {
	var (
		res    probe.Result
		output string
		err    error
	)
	for range retries {
		res, output, err = pb.runProbe(ctx, spec, pod, status, c, id)
		if err == nil {
			return res, output, nil
		}
	}
	return res, output, err
}

// runProbe dispatches on the probe's handler, as the kubelet's
// newProberAction and the ProberActions' Run methods.
func (pb *prober) runProbe(ctx context.Context, spec *v1.Probe, pod *v1.Pod, status v1.PodStatus, c *v1.Container, id container.ContainerID) (probe.Result, string, error) {
	timeout := time.Duration(spec.TimeoutSeconds) * pb.timeUnit
	switch {
	case spec.Exec != nil:
		// Like the kubelet, the command sees no pod environment; only
		// $(VAR) references to the container's static env are expanded.
		cmd := expandStaticEnv(spec.Exec.Command, c.Env)
		return probe.Exec(ctx, pb.execer, id.ID, cmd, timeout)
	case spec.HTTPGet != nil:
		req, err := probe.NewHTTPGetRequest(spec.HTTPGet, c, status.PodIP, "probe")
		if err != nil {
			return probe.Unknown, "", err
		}
		return probe.HTTP(req.WithContext(ctx), pb.transport, timeout)
	case spec.TCPSocket != nil:
		port, err := probe.ResolveContainerPort(spec.TCPSocket.Port, c)
		if err != nil {
			return probe.Unknown, "", err
		}
		host := spec.TCPSocket.Host
		if host == "" {
			host = status.PodIP
		}
		return probe.TCP(host, port, timeout)
	case spec.GRPC != nil:
		service := ""
		if spec.GRPC.Service != nil {
			service = *spec.GRPC.Service
		}
		return probe.GRPC(ctx, status.PodIP, service, int(spec.GRPC.Port), timeout)
	default:
		return probe.Unknown, "", fmt.Errorf("missing probe handler for %s:%s", formatPod(pod), c.Name)
	}
}

// formatPod renders a pod as the kubelet's format.Pod: name_namespace(uid).
func formatPod(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
