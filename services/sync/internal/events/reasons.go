package events

// Event reasons, with the kubelet's names and values (pkg/kubelet/events/
// event.go), so tooling that greps for "BackOff" or "Unhealthy" works against
// splitlet unchanged. Several names share a value ("Failed", "BackOff") on
// purpose: the kubelet does the same.

// Container event reasons.
const (
	CreatedContainer        = "Created"
	StartedContainer        = "Started"
	FailedToCreateContainer = "Failed"
	FailedToStartContainer  = "Failed"
	KillingContainer        = "Killing"
	PreemptContainer        = "Preempting"
	BackOffStartContainer   = "BackOff"
	ExceededGracePeriod     = "ExceededGracePeriod"
)

// Pod event reasons.
const (
	FailedToKillPod                = "FailedKillPod"
	FailedToCreatePodContainer     = "FailedCreatePodContainer"
	FailedToMakePodDataDirectories = "Failed"
	NetworkNotReady                = "NetworkNotReady"
	SandboxChanged                 = "SandboxChanged"
	FailedCreatePodSandBox         = "FailedCreatePodSandBox"
	FailedStatusPodSandBox         = "FailedPodSandBoxStatus"
	// Evicted is the eviction manager's reason (pkg/kubelet/eviction's
	// Reason), used both for the event and the pod status.
	Evicted = "Evicted"
	// In-place resize: granted, waiting, refused, failed, applied.
	ResizeStarted    = "ResizeStarted"
	ResizeCompleted  = "ResizeCompleted"
	ResizeDeferred   = "ResizeDeferred"
	ResizeInfeasible = "ResizeInfeasible"
	ResizeError      = "ResizeError"
)

// Image event reasons.
const (
	PullingImage            = "Pulling"
	PulledImage             = "Pulled"
	FailedToPullImage       = "Failed"
	FailedToInspectImage    = "InspectFailed"
	ErrImageNeverPullPolicy = "ErrImageNeverPull"
	BackOffPullImage        = "BackOff"
	// FailedToRetrieveImagePullSecret: a Secret of the pod's
	// imagePullSecrets could not be read.
	FailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"
)

// Node-level reasons the kubelet records; splitlet records them against pods
// only where it has no node object, but keeps the names for one vocabulary.
const (
	StartingKubelet   = "Starting"
	ContainerGCFailed = "ContainerGCFailed"
	ImageGCFailed     = "ImageGCFailed"
	FailedMountVolume = "FailedMount"
)

// Probe event reasons.
const (
	ContainerUnhealthy    = "Unhealthy"
	ContainerProbeWarning = "ProbeWarning"
)

// Pod worker, config and lifecycle hook reasons.
const (
	FailedSync          = "FailedSync"
	FailedValidation    = "FailedValidation"
	FailedPostStartHook = "FailedPostStartHook"
	FailedPreStopHook   = "FailedPreStopHook"

	// InvalidEnvironmentVariableNames: envFrom keys skipped because they
	// cannot name a variable (kubelet makeEnvironmentVariables).
	InvalidEnvironmentVariableNames = "InvalidEnvironmentVariableNames"
)
