package kuberuntime

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// computeInitContainerActions adds to changes what the init containers
// need, and reports whether the pod has finished initializing (so regular
// containers may run). It matches the kubelet's computeInitContainerActions
// (the SidecarContainers path, which handles ordinary init containers too):
//   - ordinary init containers run one at a time, in spec order; the next
//     one starts when the previous exited 0;
//   - a failed ordinary init container (non-zero exit, OOMKilled, unknown)
//     is restarted unless its effective restart policy says no (an exited
//     one: ShouldContainerBeRestarted, its rules and policy first; an
//     unknown one: its own policy, else the pod's), in which case the pod is
//     killed for good (KillPod, nothing to start);
//   - a sidecar (restartable init container) counts as done once it runs
//     and its startup probe, if any, succeeded; the next init container then
//     starts while the sidecar keeps running;
//   - sidecars are restarted whenever they exit (whatever the pod's restart
//     policy), when their spec hash changes, when a liveness or startup
//     probe fails, and when unknown (killed first);
//   - once a regular container was created or runs, initialization is
//     over: ordinary init containers are never run again, sidecars are kept
//     running.
//
// The walk goes backwards from the last init container: finished init
// containers may have been garbage-collected, so the latest one the runtime
// still knows is the best evidence of progress.
//
// It is longer than 120 lines on purpose: it stays one function in the
// order of the kubelet's computeInitContainerActions, so that the two read side by side and a
// change upstream maps to one place here.
func computeInitContainerActions(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, probes ProbeResults, changes *PodActions) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	log := loggerFrom(ctx).WithLazy(zap.String("pod", pod.Namespace+"/"+pod.Name))

	// A regular container that was created or runs proves initialization
	// happened, even if the init containers' records are gone. An exited one
	// proves nothing: after a node reboot every container is exited and the
	// new sandbox must initialize again.
	podHasInitialized := false
	for i := range pod.Spec.Containers {
		status := podStatus.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if status != nil && (status.State == container.ContainerStateCreated || status.State == container.ContainerStateRunning) {
			podHasInitialized = true
			break
		}
	}

	// isPreviouslyInitialized: every init container before the current one
	// (in spec order) is known to have completed.
	isPreviouslyInitialized := podHasInitialized
	restartOnFailure := shouldRestartOnFailure(pod)
	last := len(pod.Spec.InitContainers) - 1

	for i := last; i >= 0; i-- {
		spec := &pod.Spec.InitContainers[i]
		sidecar := container.IsRestartableInitContainer(spec)
		status := podStatus.FindContainerStatusByName(spec.Name)
		if status == nil {
			// Its record is gone. After initialization only a sidecar needs
			// to run again.
			if isPreviouslyInitialized && sidecar {
				changes.InitContainersToStart = append(changes.InitContainersToStart, i)
			}
			continue
		}

		if isPreviouslyInitialized && !sidecar {
			// Done long ago; only sidecars are kept running.
			continue
		}

		switch status.State {
		case container.ContainerStateCreated:
			// Create and start happen in one step, so a created container
			// means the start failed: try again rather than stay stuck.
			changes.InitContainersToStart = append(changes.InitContainersToStart, i)

		case container.ContainerStateRunning:
			if !sidecar {
				// An ordinary init container is running: wait for it.
				break
			}
			if !sidecarStarted(spec, i, status, probes, changes) {
				// The next init container waits for this one's startup probe.
				break
			}

			log.Debug("init container has been initialized", zap.String("container", spec.Name))
			if i == last {
				podHasInitialized = true
			} else if !isPreviouslyInitialized {
				// Initialized for the first time: start the next one.
				changes.InitContainersToStart = append(changes.InitContainersToStart, i+1)
			}

			if containerChanged(spec, status) {
				changes.ContainersToKill[status.ID] = ContainerToKillInfo{
					Name:      spec.Name,
					Container: spec,
					Message:   fmt.Sprintf("Init container %s definition changed", spec.Name),
				}
				changes.InitContainersToStart = append(changes.InitContainersToStart, i)
				break
			}

			// A sidecar's liveness does not gate the next init container,
			// but a failure restarts the sidecar.
			if spec.LivenessProbe != nil && probes.Liveness(status.ID) == ProbeFailure {
				changes.ContainersToKill[status.ID] = ContainerToKillInfo{
					Name:      spec.Name,
					Container: spec,
					Message:   fmt.Sprintf("Init container %s failed liveness probe", spec.Name),
					Reason:    ReasonLivenessProbe,
				}
				changes.InitContainersToStart = append(changes.InitContainersToStart, i)
				break
			}
			// A running sidecar is resized like a regular container.
			computePodResizeAction(pod, i, true, status, changes)

		case container.ContainerStateExited:
			if sidecar {
				// Sidecars restart whatever the pod's restart policy.
				changes.InitContainersToStart = append(changes.InitContainersToStart, i)
				break
			}
			if isInitContainerFailed(status) {
				// Its own policy and rules decide, on its exit code.
				if !container.ShouldContainerBeRestarted(spec, pod, podStatus) {
					// The pod can never initialize: it is terminal.
					changes.KillPod = true
					changes.InitContainersToStart = nil
					return false
				}
				changes.InitContainersToStart = append(changes.InitContainersToStart, i)
				break
			}
			log.Debug("init container has been initialized", zap.String("container", spec.Name))
			if i == last {
				podHasInitialized = true
			} else {
				changes.InitContainersToStart = append(changes.InitContainersToStart, i+1)
			}

		default: // container.ContainerStateUnknown and anything unexpected
			if !sidecar {
				if !isInitContainerFailed(status) {
					log.Debug("init container is in unknown state but not failed", zap.String("container", spec.Name))
				}
				// No exit code to match rules against: only a
				// container-level policy overrides the pod's.
				restart := restartOnFailure
				if spec.RestartPolicy != nil {
					restart = *spec.RestartPolicy != v1.ContainerRestartPolicyNever
				}
				if !restart {
					changes.KillPod = true
					changes.InitContainersToStart = nil
					return false
				}
			}
			// It may still run: kill it before starting it again.
			changes.ContainersToKill[status.ID] = ContainerToKillInfo{
				Name:      spec.Name,
				Container: spec,
				Message:   fmt.Sprintf("Init container is in %q state, try killing it before restart", status.State),
				Reason:    ReasonUnknown,
			}
			changes.InitContainersToStart = append(changes.InitContainersToStart, i)
		}

		// Whatever its state, this init container was started, so every one
		// before it completed.
		isPreviouslyInitialized = true
	}

	if !isPreviouslyInitialized {
		// No init container was ever started: start the first.
		changes.InitContainersToStart = append(changes.InitContainersToStart, 0)
	}

	// The walk went backwards; start in spec order.
	slices.Reverse(changes.InitContainersToStart)
	return podHasInitialized
}

// sidecarStarted reports whether a running sidecar counts as started: it
// has no startup probe, or the probe succeeded. A failed startup probe
// queues the sidecar for a kill and a restart, as the kubelet's
// computeInitContainerActions does.
func sidecarStarted(spec *v1.Container, idx int, status *container.Status, probes ProbeResults, changes *PodActions) bool {
	if spec.StartupProbe == nil {
		return true
	}
	switch probes.Startup(status.ID) {
	case ProbeSuccess:
		return true
	case ProbeFailure:
		changes.ContainersToKill[status.ID] = ContainerToKillInfo{
			Name:      spec.Name,
			Container: spec,
			Message:   fmt.Sprintf("Init container %s failed startup probe", spec.Name),
			Reason:    ReasonStartupProbe,
		}
		changes.InitContainersToStart = append(changes.InitContainersToStart, idx)
		return false
	default:
		return false
	}
}

// isInitContainerFailed reports whether an ordinary init container's latest
// run failed: it exited non-zero, was OOM-killed, or is in an unknown state.
// Matches the kubelet's isInitContainerFailed.
func isInitContainerFailed(status *container.Status) bool {
	// An OOM kill fails the init container even if the process reported
	// success on its way out.
	if status.Reason == "OOMKilled" {
		return true
	}
	switch status.State {
	case container.ContainerStateExited:
		return status.ExitCode != 0
	case container.ContainerStateUnknown:
		return true
	default:
		return false
	}
}

// hasAnyRegularContainerCreated reports whether any regular container was
// created, runs or ran, which means initialization completed at some point.
// Matches the kubelet's hasAnyRegularContainerCreated.
func hasAnyRegularContainerCreated(pod *v1.Pod, podStatus *container.PodStatus) bool {
	for i := range pod.Spec.Containers {
		status := podStatus.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if status == nil {
			continue
		}
		switch status.State {
		case container.ContainerStateCreated, container.ContainerStateRunning, container.ContainerStateExited:
			return true
		}
	}
	return false
}
