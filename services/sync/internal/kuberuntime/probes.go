package kuberuntime

import "github.com/splitlet/splitlet/services/sync/internal/container"

// ProbeResult is the latest outcome of one probe of one container instance.
type ProbeResult int

const (
	// ProbeUnknown means no result yet: the probe has not run (or is not
	// configured). The kubelet's results managers report this as "not
	// found"; both lead to the same decisions, so one value serves.
	ProbeUnknown ProbeResult = iota
	// ProbeSuccess means the probe passed.
	ProbeSuccess
	// ProbeFailure means the probe failed past its failure threshold.
	ProbeFailure
)

// String returns the kubelet's spelling of the result.
func (r ProbeResult) String() string {
	switch r {
	case ProbeSuccess:
		return "Success"
	case ProbeFailure:
		return "Failure"
	default:
		return "Unknown"
	}
}

// ProbeResults gives the latest liveness and startup results per container
// instance, as the kubelet's livenessManager and startupManager do
// (proberesults.Manager). Readiness is not asked: it never kills a
// container.
//
// Implementations must be safe for concurrent use (pod workers call them in
// parallel) and must not block: computePodActions calls them inline. An
// instance with no result, or an ID never seen, yields ProbeUnknown.
type ProbeResults interface {
	Liveness(id container.ContainerID) ProbeResult
	Startup(id container.ContainerID) ProbeResult
}

// noProbeResults answers ProbeUnknown for everything; it stands in when the
// caller has no probe manager.
type noProbeResults struct{}

var _ ProbeResults = noProbeResults{}

func (noProbeResults) Liveness(container.ContainerID) ProbeResult { return ProbeUnknown }
func (noProbeResults) Startup(container.ContainerID) ProbeResult  { return ProbeUnknown }
