package status

import (
	"cmp"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// Waiting reasons the status itself produces, and the termination reason of
// a container that disappeared; the kubelet's constants of the same names.
const (
	// ContainerCreating is the default waiting reason of a regular container
	// in a pod without init containers.
	ContainerCreating = "ContainerCreating"
	// PodInitializing is the default waiting reason of every container of a
	// pod with init containers.
	PodInitializing = "PodInitializing"
	// ContainerStatusUnknown is the termination reason given to a container
	// that was running and can no longer be found.
	ContainerStatusUnknown = "ContainerStatusUnknown"

	// messageNotLocatedTerminated is the kubelet's message for a container
	// that vanished while its pod was terminated (or while running).
	messageNotLocatedTerminated = "The container could not be located when the pod was terminated"
	// messageNotLocatedDeleted is the kubelet's message, recorded as the
	// last termination, for a running container whose instance the runtime
	// no longer has.
	messageNotLocatedDeleted = "The container could not be located when the pod was deleted.  The container used to be Running"
	// messageInitAssumedCompleted is the kubelet's message for an init
	// container whose instance is gone after the regular containers were
	// created.
	messageInitAssumedCompleted = "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally"
	// messageRemovedByRestartAll is the kubelet's message for a container
	// removed by an in-place restart of its pod.
	messageRemovedByRestartAll = "The container is removed because RestartAllContainers in place"
)

// convertToAPIContainerStatuses builds the API statuses of one list of
// containers (regular, init or ephemeral) from the runtime's instances, the
// previous API statuses and the recorded waiting reasons. It matches the
// kubelet's convertToAPIContainerStatuses (without image volume digests and
// stop signals, which the runtime view here does not carry); pod is the
// allocated pod (its containers' resources are their allocation):
//
//  1. Every container starts Waiting (PodInitializing when the pod has init
//     containers, ContainerCreating otherwise); a previous Terminated status
//     is kept whole, otherwise the previous restart count and last
//     termination are kept.
//  2. A container the runtime no longer has, which was Running before, gets
//     a ContainerStatusUnknown last termination (exit 137), and a restart
//     counted unless the pod is being deleted. While the pod restarts in
//     place (podRestarting), every such container not already waiting is
//     Waiting with reason RestartingAllContainers instead, with a
//     termination of that reason (exit 137) and a restart counted.
//  3. The newest instance gives the state, the one before it the last
//     termination state.
//  4. A container SyncPod will (re)start and that has a recorded reason is
//     Waiting with that reason; a terminated state moves to last
//     termination. A vanished ordinary init container is taken as completed
//     once regular containers exist.
//
// It is longer than 120 lines on purpose: it stays one function in the
// order of the kubelet's convertToAPIContainerStatuses, so that the two read side by side and a
// change upstream maps to one place here.
func convertToAPIContainerStatuses(pod *v1.Pod, podStatus *container.PodStatus, previousStatus []v1.ContainerStatus,
	containers []v1.Container, hasInitContainers, isInitContainer, podRestarting bool, reasons ReasonLookup, rro *rroSupport) []v1.ContainerStatus {
	oldStatuses := make(map[string]v1.ContainerStatus, len(containers))
	for _, s := range previousStatus {
		oldStatuses[s.Name] = *s.DeepCopy()
	}

	defaultWaitingReason := ContainerCreating
	if hasInitContainers {
		defaultWaitingReason = PodInitializing
	}

	statuses := make(map[string]*v1.ContainerStatus, len(containers))
	for i := range containers {
		c := &containers[i]
		status := &v1.ContainerStatus{
			Name:         c.Name,
			Image:        c.Image,
			State:        v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: defaultWaitingReason}},
			VolumeMounts: volumeMountStatuses(c, rro),
		}
		if old, ok := oldStatuses[c.Name]; ok {
			if old.State.Terminated != nil {
				// A terminated container stays terminated until the runtime
				// says otherwise (step 3) or SyncPod restarts it (step 4).
				old := old
				status = &old
			} else {
				status.RestartCount = old.RestartCount
				status.LastTerminationState = old.LastTerminationState
			}
		}
		statuses[c.Name] = status
	}

	// Step 2: running containers whose instances vanished.
	for i := range containers {
		c := &containers[i]
		if podStatus.FindContainerStatusByName(c.Name) != nil {
			continue
		}
		old, ok := oldStatuses[c.Name]
		if !ok {
			continue
		}
		if podRestarting && old.State.Waiting == nil {
			// Removed by the pod's in-place restart: waiting to run again.
			statuses[c.Name] = removedByRestartAll(statuses[c.Name], old.RestartCount)
			continue
		}
		if old.State.Terminated != nil || old.State.Running == nil {
			continue
		}
		status := statuses[c.Name]
		if status.State.Waiting == nil || status.State.Waiting.Reason != defaultWaitingReason {
			continue
		}
		if status.LastTerminationState.Terminated != nil {
			continue
		}
		// Shown as stopped rather than as never started, so that the pod
		// does not fall back to Pending.
		status.LastTerminationState.Terminated = &v1.ContainerStateTerminated{
			Reason:   ContainerStatusUnknown,
			Message:  messageNotLocatedDeleted,
			ExitCode: 137,
		}
		if pod.DeletionTimestamp == nil {
			status.RestartCount++
		}
	}

	// Step 3: the two newest instances of each container.
	instances := slices.Clone(podStatus.ContainerStatuses)
	slices.SortStableFunc(instances, func(a, b *container.Status) int {
		return cmp.Compare(b.CreatedAt.UnixNano(), a.CreatedAt.UnixNano())
	})
	seen := make(map[string]int)
	for _, cs := range instances {
		if _, ok := statuses[cs.Name]; !ok || seen[cs.Name] >= 2 {
			continue
		}
		var oldPtr *v1.ContainerStatus
		if old, ok := oldStatuses[cs.Name]; ok {
			oldPtr = &old
		}
		status := convertContainerStatus(cs, oldPtr, podRestarting)
		if spec := findSpec(containers, cs.Name); spec != nil {
			// pod is the allocated pod: its spec holds what the node
			// granted, which the running instance may not have yet.
			status.Resources = convertContainerStatusResources(spec, status, cs, oldStatuses)
			status.AllocatedResources = spec.Resources.Requests.DeepCopy()
			if status.VolumeMounts == nil {
				// The kubelet copies mounts only from the previous status;
				// without one they are derived from the spec, the value the
				// kubelet converges to one sync later.
				status.VolumeMounts = volumeMountStatuses(spec, rro)
			}
		}
		if seen[cs.Name] == 0 {
			statuses[cs.Name] = status
		} else {
			statuses[cs.Name].LastTerminationState = status.State
		}
		seen[cs.Name]++
	}

	// Step 4: containers waiting to be (re)started.
	for i := range containers {
		c := &containers[i]
		if isInitContainer {
			s := podStatus.FindContainerStatusByName(c.Name)
			if s != nil && s.State == container.ContainerStateExited && s.ExitCode == 0 {
				// A completed init container is not run again.
				continue
			}
			if s == nil && !container.IsRestartableInitContainer(c) &&
				hasAnyRegularContainerCreated(pod, podStatus) && statuses[c.Name].State.Waiting != nil {
				// Its instance was garbage-collected (or the status never
				// reached the store), but regular containers exist, so it
				// completed.
				statuses[c.Name].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					Reason:   "Completed",
					Message:  messageInitAssumedCompleted,
					ExitCode: 0,
				}}
				continue
			}
		}
		if !container.ShouldContainerBeRestarted(c, pod, podStatus) {
			continue
		}
		if reasons == nil {
			continue
		}
		reason, ok := reasons.Get(pod.UID, c.Name)
		if !ok {
			// Keep the current state: it is either the default waiting
			// state or the termination SyncPod is about to restart from.
			continue
		}
		status := statuses[c.Name]
		if status.State.Terminated != nil {
			status.LastTerminationState = status.State
		}
		status.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{
			Reason:  reason.Reason,
			Message: reason.Message,
		}}
	}

	out := make([]v1.ContainerStatus, 0, len(statuses))
	for _, s := range statuses {
		out = append(out, *s)
	}
	if isInitContainer {
		sortInitContainerStatuses(pod, out)
	} else {
		sortByName(out)
	}
	return out
}

// convertContainerStatus converts one runtime instance. Matches the closure
// of the same name in the kubelet's convertToAPIContainerStatuses (with
// RestartAllContainersOnContainerExits on, as in v1.36): created is Waiting
// (start pending), exited is Terminated with the runtime's code, reason and
// message, and unknown is Terminated ContainerStatusUnknown (or
// RestartingAllContainers while the pod restarts in place; exit 137, one
// more restart) when the container was Running before, Waiting otherwise.
// Because an in-place restart removes the old instances, the restart count
// never goes below the previous status's, and the previous termination is
// carried over when the runtime no longer has it.
func convertContainerStatus(cs *container.Status, old *v1.ContainerStatus, podRestarting bool) *v1.ContainerStatus {
	cid := cs.ID.String()
	status := &v1.ContainerStatus{
		Name:         cs.Name,
		RestartCount: int32(cs.RestartCount),
		Image:        cs.Image,
		// The resolved reference (digest) is what the API calls imageID.
		ImageID:     cs.ImageRef,
		ContainerID: cid,
		// The identity the process runs with, as the runtime reports it
		// (SupplementalGroupsPolicy, GA in v1.36).
		User: cs.User.DeepCopy(),
	}
	if old != nil {
		status.VolumeMounts = old.VolumeMounts
		status.RestartCount = max(status.RestartCount, old.RestartCount)
		if old.ContainerID != status.ContainerID && old.State.Terminated != nil {
			status.LastTerminationState.Terminated = old.State.Terminated
		} else if old.LastTerminationState.Terminated != nil {
			status.LastTerminationState.Terminated = old.LastTerminationState.Terminated
		}
	}
	switch {
	case cs.State == container.ContainerStateRunning:
		status.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(cs.StartedAt)}
		if old != nil && old.State.Terminated != nil && old.RestartCount >= int32(cs.RestartCount) {
			// A new instance after one the runtime no longer has (an
			// in-place restart removed it): it is a restart all the same.
			status.RestartCount = old.RestartCount + 1
		}
	case cs.State == container.ContainerStateCreated:
		status.State.Waiting = &v1.ContainerStateWaiting{}
	case cs.State == container.ContainerStateExited:
		status.State.Terminated = &v1.ContainerStateTerminated{
			ExitCode:    int32(cs.ExitCode),
			Reason:      cs.Reason,
			Message:     cs.Message,
			StartedAt:   metav1.NewTime(cs.StartedAt),
			FinishedAt:  metav1.NewTime(cs.FinishedAt),
			ContainerID: cid,
		}
	case cs.State == container.ContainerStateUnknown && old != nil && old.State.Running != nil:
		// It ran and is no longer seen running: report that it stopped,
		// not that it never ran, or a run-once pod could run twice.
		reason := ContainerStatusUnknown
		if podRestarting {
			reason = RestartingAllContainers
		}
		status.State.Terminated = &v1.ContainerStateTerminated{
			Reason:   reason,
			Message:  messageNotLocatedTerminated,
			ExitCode: 137,
		}
		status.RestartCount = old.RestartCount + 1
	default:
		status.State.Waiting = &v1.ContainerStateWaiting{}
	}
	return status
}

// removedByRestartAll is the status of a container an in-place restart of
// its pod removed: waiting to run again, its last termination saying why
// (the kubelet gives it exit code 137), one more restart counted.
func removedByRestartAll(status *v1.ContainerStatus, oldRestartCount int32) *v1.ContainerStatus {
	status.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{
		Reason: RestartingAllContainers, Message: messageRemovedByRestartAll,
	}}
	status.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		Reason: RestartingAllContainers, Message: messageRemovedByRestartAll, ExitCode: 137,
	}}
	status.RestartCount = oldRestartCount + 1
	return status
}

// volumeMountStatuses lists the container's mounts for its status. Matches
// the RecursiveReadOnlyMounts part of convertToAPIContainerStatuses: a
// read-only mount reports whether it is recursively read-only, IfPossible
// as the runtime handler's support (rro) says; a mode that cannot
// be honoured (Enabled without support) reports Disabled, its container
// waiting with CreateContainerConfigError.
func volumeMountStatuses(c *v1.Container, rro *rroSupport) []v1.VolumeMountStatus {
	var out []v1.VolumeMountStatus
	for _, m := range c.VolumeMounts {
		s := v1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			mode := v1.RecursiveReadOnlyDisabled
			if m.RecursiveReadOnly != nil && *m.RecursiveReadOnly != v1.RecursiveReadOnlyDisabled {
				if rro, err := container.ResolveRecursiveReadOnly(m, rro.supported()); err == nil && rro {
					mode = v1.RecursiveReadOnlyEnabled
				}
			}
			s.RecursiveReadOnly = &mode
		}
		out = append(out, s)
	}
	return out
}

func findSpec(containers []v1.Container, name string) *v1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}

// sortByName orders statuses by container name, as the kubelet's
// SortedContainerStatuses.
func sortByName(statuses []v1.ContainerStatus) {
	slices.SortStableFunc(statuses, func(a, b v1.ContainerStatus) int { return cmp.Compare(a.Name, b.Name) })
}

// sortInitContainerStatuses orders init container statuses as the spec
// lists the containers, statuses of unknown names last. Matches the
// kubelet's SortInitContainerStatuses.
func sortInitContainerStatuses(pod *v1.Pod, statuses []v1.ContainerStatus) {
	index := make(map[string]int, len(pod.Spec.InitContainers))
	for i := range pod.Spec.InitContainers {
		index[pod.Spec.InitContainers[i].Name] = i
	}
	pos := func(name string) int {
		if i, ok := index[name]; ok {
			return i
		}
		return len(index)
	}
	slices.SortStableFunc(statuses, func(a, b v1.ContainerStatus) int { return cmp.Compare(pos(a.Name), pos(b.Name)) })
}

// ApplyProbeResults sets started and ready on regular and init container
// statuses from the results readiness and startup give (nil: none yet). It
// is the core of the kubelet's prober manager UpdatePodStatus, without its
// probe triggering and restart handling (prober.Manager adds those), and
// what status generation does when there is no probe manager:
//   - started: running, and the startup probe succeeded (or there is none);
//   - ready (regular containers and sidecars): started, running, and the
//     readiness probe succeeded (or there is none);
//   - ready (ordinary init containers): exited 0.
//
// Ephemeral containers get neither, as with the kubelet.
func ApplyProbeResults(pod *v1.Pod, s *v1.PodStatus, readiness, startup ProbeResultFunc) {
	for i := range s.ContainerStatuses {
		cs := &s.ContainerStatuses[i]
		spec := findSpec(pod.Spec.Containers, cs.Name)
		started := isContainerStarted(spec, cs, startup)
		cs.Started = &started
		if started {
			cs.Ready = isContainerReady(spec, cs, readiness)
		}
	}
	for i := range s.InitContainerStatuses {
		cs := &s.InitContainerStatuses[i]
		spec := findSpec(pod.Spec.InitContainers, cs.Name)
		started := isContainerStarted(spec, cs, startup)
		cs.Started = &started
		if !container.IsRestartableInitContainer(spec) {
			cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
			continue
		}
		if started {
			cs.Ready = isContainerReady(spec, cs, readiness)
		}
	}
}

// isContainerStarted matches the kubelet prober manager's
// isContainerStarted: a probe with no result yet means not started.
func isContainerStarted(spec *v1.Container, cs *v1.ContainerStatus, startup ProbeResultFunc) bool {
	if cs.State.Running == nil {
		return false
	}
	if startup != nil {
		if success, ok := startup(parseContainerID(cs.ContainerID)); ok {
			return success
		}
	}
	return spec == nil || spec.StartupProbe == nil
}

// isContainerReady: a success is ready; otherwise (failure or no result)
// ready only without a readiness probe, as in UpdatePodStatus.
func isContainerReady(spec *v1.Container, cs *v1.ContainerStatus, readiness ProbeResultFunc) bool {
	if cs.State.Running == nil {
		return false
	}
	if readiness != nil {
		if success, ok := readiness(parseContainerID(cs.ContainerID)); ok && success {
			return true
		}
	}
	return spec == nil || spec.ReadinessProbe == nil
}

// parseContainerID splits "<type>://<id>"; an unparsable ID yields the zero
// ID. Matches the kubelet's kubecontainer.ParseContainerID.
func parseContainerID(s string) container.ContainerID {
	typ, id, ok := strings.Cut(s, "://")
	if !ok {
		return container.ContainerID{}
	}
	return container.BuildContainerID(typ, id)
}

// Below these, cgroup values do not tell allocations apart (every request
// of 2m or less is 2 shares, every limit of 10m or less a 1 ms quota): the
// kubelet's cm.MinShares and cm.MinMilliCPULimit.
const (
	minMilliCPURequest = 2
	minMilliCPULimit   = 10
)

// convertContainerStatusResources is the status's resources of a container
// instance: its allocation (spec, from the allocated pod), with each CPU
// and memory value of a running instance replaced by what it actually runs
// with (cs.ActualResources), or, when that is unknown, by the previous
// status's value for the same running instance. A CPU value at or below
// the cgroup minimum on both sides keeps the allocated value, so that 1m
// does not read back as 2m. Matches the closure of that name in the
// kubelet's convertToAPIContainerStatuses.
func convertContainerStatusResources(spec *v1.Container, status *v1.ContainerStatus, cs *container.Status, oldStatuses map[string]v1.ContainerStatus) *v1.ResourceRequirements {
	resources := spec.Resources.DeepCopy()
	resources.Claims = spec.Resources.Claims
	if cs.State != container.ContainerStateRunning {
		return resources
	}
	old, oldFound := oldStatuses[spec.Name]
	oldResources := old.Resources
	if oldResources == nil {
		oldResources = &v1.ResourceRequirements{}
	}
	preserveOld := func(name v1.ResourceName, oldList, list v1.ResourceList) {
		if oldFound && old.State.Running != nil && status.ContainerID == old.ContainerID && oldList != nil {
			if q, ok := oldList[name]; ok {
				list[name] = q.DeepCopy()
			}
		}
	}
	actual := cs.ActualResources
	if actual == nil {
		actual = &container.ContainerResources{}
	}
	if resources.Limits != nil {
		if actual.CPULimit != nil {
			if actual.CPULimit.MilliValue() > minMilliCPULimit || resources.Limits.Cpu().MilliValue() > minMilliCPULimit {
				resources.Limits[v1.ResourceCPU] = actual.CPULimit.DeepCopy()
			}
		} else {
			preserveOld(v1.ResourceCPU, oldResources.Limits, resources.Limits)
		}
		if actual.MemoryLimit != nil {
			resources.Limits[v1.ResourceMemory] = actual.MemoryLimit.DeepCopy()
		} else {
			preserveOld(v1.ResourceMemory, oldResources.Limits, resources.Limits)
		}
	}
	if resources.Requests != nil {
		if actual.CPURequest != nil {
			if actual.CPURequest.MilliValue() > minMilliCPURequest || resources.Requests.Cpu().MilliValue() > minMilliCPURequest {
				resources.Requests[v1.ResourceCPU] = actual.CPURequest.DeepCopy()
			}
		} else {
			preserveOld(v1.ResourceCPU, oldResources.Requests, resources.Requests)
		}
		if actual.MemoryRequest != nil {
			resources.Requests[v1.ResourceMemory] = actual.MemoryRequest.DeepCopy()
		} else {
			preserveOld(v1.ResourceMemory, oldResources.Requests, resources.Requests)
		}
	}
	return resources
}
