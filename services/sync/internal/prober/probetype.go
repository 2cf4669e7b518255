package prober

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// probeType is liveness, readiness or startup.
type probeType int

const (
	liveness probeType = iota
	readiness
	startup
)

// String is the kubelet's spelling, which starts every probe event message
// ("Liveness probe failed: ...").
func (t probeType) String() string {
	switch t {
	case readiness:
		return "Readiness"
	case liveness:
		return "Liveness"
	case startup:
		return "Startup"
	default:
		return "UNKNOWN"
	}
}

// spec returns the container's probe of this type, or nil.
func (t probeType) spec(c *v1.Container) *v1.Probe {
	switch t {
	case liveness:
		return c.LivenessProbe
	case readiness:
		return c.ReadinessProbe
	case startup:
		return c.StartupProbe
	}
	return nil
}

// initialValue is what a worker reports for a new container instance
// before its first probe, as in the kubelet's newWorker: a live container
// until proven otherwise, not ready until proven, and no startup verdict.
func (t probeType) initialValue() kuberuntime.ProbeResult {
	switch t {
	case liveness:
		return kuberuntime.ProbeSuccess
	case readiness:
		return kuberuntime.ProbeFailure
	default:
		return kuberuntime.ProbeUnknown
	}
}

// probeKey identifies one worker, as the kubelet's probeKey.
type probeKey struct {
	podUID        types.UID
	containerName string
	probeType     probeType
}
