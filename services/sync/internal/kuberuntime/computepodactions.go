package kuberuntime

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// ComputePodActions is computePodActions for callers outside this package
// (diagnostics, tests of other packages). A nil probes means no probe
// results.
func ComputePodActions(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, probes ProbeResults, restartAllContainers bool) PodActions {
	return computePodActions(ctx, pod, podStatus, probes, restartAllContainers)
}

// computePodActions decides what SyncPod must do to bring the pod, as the
// runtime reports it in podStatus, to its spec. It matches the kubelet's
// kubeGenericRuntimeManager.computePodActions (sidecar-aware path, with the
// ContainerRestartRules and RestartAllContainersOnContainerExits gates on as
// in v1.36):
//
//  0. If the pod is being restarted in place (restartAllContainers: its API
//     status carries AllContainersRestarting=True), every instance of every
//     init and regular container is to be removed, the running ones killed
//     first (ContainersToReset), and nothing else is done; the sandbox is
//     kept.
//  1. If the sandbox must be (re)created (podSandboxChanged), everything is
//     killed and the pod starts over from its first init container, except
//     that a pod which must not restart (restartPolicy Never, an earlier
//     sandbox existed, containers ran) gets no new sandbox, and a pod whose
//     regular containers have all run to a state that needs no restart gets
//     no new sandbox either.
//  2. Ephemeral containers never seen are started; they are never restarted.
//  3. Init containers are handled by computeInitContainerActions; until
//     initialization is done, regular containers are left alone.
//  4. Each regular container not running is started if
//     ShouldContainerBeRestarted says so (unknown ones are killed first);
//     each running one is killed, and restarted per policy (its own
//     restartPolicy if set, else the pod's; rules need an exit code), if
//     its spec hash changed (restarted whatever the policy), its liveness
//     probe failed or its startup probe failed; a running container kept
//     is resized in place, or restarted when its resizePolicy says so, if
//     its actuated resources differ from its allocation (pod is the
//     allocated pod: computePodResizeAction).
//  5. If no container is kept and none is started, the pod is killed.
//
// Restart back-off is deliberately not consulted: SyncPod checks it when it
// starts each container, as the kubelet's SyncPod does.
func computePodActions(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, probes ProbeResults, restartAllContainers bool) PodActions {
	if probes == nil {
		probes = noProbeResults{}
	}
	if podStatus == nil {
		podStatus = &container.PodStatus{}
	}
	log := loggerFrom(ctx).WithLazy(zap.String("pod", pod.Namespace+"/"+pod.Name))

	createPodSandbox, attempt, sandboxID := podSandboxChanged(ctx, pod, podStatus)
	changes := PodActions{
		KillPod:           createPodSandbox,
		CreateSandbox:     createPodSandbox,
		SandboxID:         sandboxID,
		Attempt:           attempt,
		ContainersToStart: []int{},
		ContainersToKill:  make(map[container.ContainerID]ContainerToKillInfo),
	}

	if restartAllContainers {
		log.Debug("pod marked for RestartAllContainers")
		changes.ContainersToReset = containersToReset(pod, podStatus)
		return changes
	}
	if createPodSandbox {
		return computeSandboxRecreation(pod, podStatus, changes)
	}

	// Ephemeral containers may start before initialization completes, so
	// that a stuck init container can be debugged.
	for i := range pod.Spec.EphemeralContainers {
		name := pod.Spec.EphemeralContainers[i].Name
		if podStatus.FindContainerStatusByName(name) == nil {
			changes.EphemeralContainersToStart = append(changes.EphemeralContainersToStart, i)
		}
	}

	hasInitialized := computeInitContainerActions(ctx, pod, podStatus, probes, &changes)
	if changes.KillPod || !hasInitialized {
		// Initialization failed for good, or is still in progress: regular
		// containers wait.
		return changes
	}

	keepCount := 0
	for idx := range pod.Spec.Containers {
		spec := &pod.Spec.Containers[idx]
		status := podStatus.FindContainerStatusByName(spec.Name)

		if status == nil || status.State != container.ContainerStateRunning {
			if container.ShouldContainerBeRestarted(spec, pod, podStatus) {
				log.Debug("container is not in the desired state and shall be started", zap.String("container", spec.Name))
				changes.ContainersToStart = append(changes.ContainersToStart, idx)
				if status != nil && status.State == container.ContainerStateUnknown {
					// An unknown container may still be running; kill it
					// first so that two instances never run at once.
					changes.ContainersToKill[status.ID] = ContainerToKillInfo{
						Name:      status.Name,
						Container: spec,
						Message:   fmt.Sprintf("Container is in %q state, try killing it before restart", status.State),
						Reason:    ReasonUnknown,
					}
				}
			}
			continue
		}

		// The container runs; decide whether it must be killed.
		var message string
		var reason ContainerKillReason
		// Probe failures and changed specs leave no exit code, so only
		// the container-level policy, not its rules, can override the
		// pod's here.
		restart := shouldRestartOnFailure(pod)
		if spec.RestartPolicy != nil {
			restart = *spec.RestartPolicy != v1.ContainerRestartPolicyNever
		}
		switch {
		case containerChanged(spec, status):
			message = fmt.Sprintf("Container %s definition changed", spec.Name)
			// A new definition must run whatever the restart policy says.
			restart = true
		case probes.Liveness(status.ID) == ProbeFailure:
			message = fmt.Sprintf("Container %s failed liveness probe", spec.Name)
			reason = ReasonLivenessProbe
		case probes.Startup(status.ID) == ProbeFailure:
			message = fmt.Sprintf("Container %s failed startup probe", spec.Name)
			reason = ReasonStartupProbe
		default:
			if computePodResizeAction(pod, idx, false, status, &changes) {
				keepCount++
			}
			continue
		}

		// The pod is not killed for this: the container is expected to run
		// again (or, under Never, the remaining ones keep the pod going).
		if restart {
			message += ", will be restarted"
			changes.ContainersToStart = append(changes.ContainersToStart, idx)
		}
		changes.ContainersToKill[status.ID] = ContainerToKillInfo{
			Name:      status.Name,
			Container: spec,
			Message:   message,
			Reason:    reason,
		}
		log.Debug("container will be killed", zap.String("container", spec.Name),
			zap.String("containerID", status.ID.String()), zap.String("message", message))
	}

	if keepCount == 0 && len(changes.ContainersToStart) == 0 {
		changes.KillPod = true
		// Sidecars alone must not keep a finished pod alive.
		changes.InitContainersToStart = nil
	}
	return changes
}

// computeSandboxRecreation finishes computePodActions when the sandbox must
// be (re)created: the pod starts over from the beginning, or, if nothing
// would run in the new sandbox, is only killed. It is the createPodSandbox
// branch of the kubelet's computePodActions.
func computeSandboxRecreation(pod *v1.Pod, podStatus *container.PodStatus, changes PodActions) PodActions {
	if !shouldRestartOnFailure(pod) && changes.Attempt != 0 && len(podStatus.ContainerStatuses) != 0 {
		// A Never pod whose sandbox went away after containers ran must not
		// run again; recreating a sandbox only to tear it down would confuse.
		// With no container statuses at all, no container ever got created,
		// so creating the sandbox is retried.
		changes.CreateSandbox = false
		return changes
	}

	var containersToStart []int
	for idx := range pod.Spec.Containers {
		spec := &pod.Spec.Containers[idx]
		// A container that runs once (OnFailure, its own policy first)
		// and succeeded is not run again in the new sandbox.
		runOnce := pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure
		if spec.RestartPolicy != nil {
			runOnce = *spec.RestartPolicy == v1.ContainerRestartPolicyOnFailure
		}
		if runOnce && containerSucceeded(spec, podStatus) {
			continue
		}
		containersToStart = append(containersToStart, idx)
	}

	// Initialization done and nothing left to start: no new sandbox, just
	// kill what is left.
	if len(containersToStart) == 0 && hasAnyRegularContainerCreated(pod, podStatus) {
		changes.CreateSandbox = false
		return changes
	}

	if len(pod.Spec.InitContainers) != 0 {
		// A new sandbox runs initialization again from the first init
		// container; regular containers wait for it.
		changes.InitContainersToStart = []int{0}
		return changes
	}
	changes.ContainersToStart = containersToStart
	return changes
}

// containerChanged reports whether the running container was created from a
// spec whose hash differs from the current one. Matches the kubelet's
// containerChanged.
func containerChanged(spec *v1.Container, status *container.Status) bool {
	return container.HashContainer(spec) != status.Hash
}

// shouldRestartOnFailure reports whether failed containers are restarted.
// Matches the kubelet's shouldRestartOnFailure: Always and OnFailure do.
func shouldRestartOnFailure(pod *v1.Pod) bool {
	return pod.Spec.RestartPolicy != v1.RestartPolicyNever
}

// containerSucceeded reports whether the container's latest instance exited
// with code 0. Matches the kubelet's containerSucceeded.
func containerSucceeded(spec *v1.Container, podStatus *container.PodStatus) bool {
	status := podStatus.FindContainerStatusByName(spec.Name)
	return status != nil && status.State == container.ContainerStateExited && status.ExitCode == 0
}

// containersToReset lists the instances to remove for an in-place restart:
// first the regular containers that did not trigger it, then such init
// containers, then the triggering regular containers, then the triggering
// init containers, so that the evidence of why the pod restarts goes last.
// Matches the order the kubelet's computePodActions builds from
// getContainersToReset.
func containersToReset(pod *v1.Pod, podStatus *container.PodStatus) []ContainerToRemoveInfo {
	sourceInits, targetInits := splitContainersToReset(pod.Spec.InitContainers, podStatus)
	sources, targets := splitContainersToReset(pod.Spec.Containers, podStatus)
	return slices.Concat(targets, targetInits, sources, sourceInits)
}

// splitContainersToReset returns every runtime instance of containers (all
// of them, not just the newest: the runtime must be emptied), split into
// the exited instances whose exit code matches a RestartAllContainers rule
// (sources) and the rest (targets); instances not exited are to be killed.
// Matches the kubelet's getContainersToReset.
func splitContainersToReset(containers []v1.Container, podStatus *container.PodStatus) (sources, targets []ContainerToRemoveInfo) {
	for i := range containers {
		c := &containers[i]
		for _, s := range podStatus.ContainerStatuses {
			if s.Name != c.Name {
				continue
			}
			info := ContainerToRemoveInfo{ContainerID: s.ID, Container: c}
			switch {
			case s.State != container.ContainerStateExited:
				info.Kill = true
				targets = append(targets, info)
			case container.TriggersRestartAll(c, int32(s.ExitCode)):
				sources = append(sources, info)
			default:
				targets = append(targets, info)
			}
		}
	}
	return sources, targets
}
