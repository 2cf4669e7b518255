package status

import (
	"fmt"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// maxPodTerminationMessageLogLength bounds the termination messages of all
// of a pod's containers together (the kubelet's
// kubecontainer.MaxPodTerminationMessageLogLength, 12 KiB).
const maxPodTerminationMessageLogLength = 1024 * 12

// updateLastTransitionTime stamps condition t of status with now, or with
// the old status's time when the condition's status did not change. Matches
// the kubelet status manager's updateLastTransitionTime.
func updateLastTransitionTime(status, old *v1.PodStatus, t v1.PodConditionType, now time.Time) {
	c := findCondition(status.Conditions, t)
	if c == nil {
		return
	}
	c.LastTransitionTime = metav1.NewTime(now)
	if oc := findCondition(old.Conditions, t); oc != nil && oc.Status == c.Status {
		c.LastTransitionTime = oc.LastTransitionTime
	}
}

// normalizeStatus truncates the status's timestamps to seconds (the API
// server stores RFC 3339 without fractions), bounds each container's
// termination message to its share of 12 KiB, and sorts container statuses
// by name and init container statuses in spec order, so that a status
// compares equal to itself read back from the API. Matches the kubelet
// status manager's normalizeStatus; ephemeral container statuses are
// normalized too (the kubelet leaves them, which makes every comparison of
// a pod with ephemeral containers differ).
func normalizeStatus(pod *v1.Pod, status *v1.PodStatus) {
	bytesPerStatus := maxPodTerminationMessageLogLength
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers); n > 0 {
		bytesPerStatus /= n
	}
	normalizeTimes(status, bytesPerStatus)
	sortByName(status.ContainerStatuses)
	sortInitContainerStatuses(pod, status.InitContainerStatuses)
}

// normalizeTimes is normalizeStatus's pod-independent part; bytesPerStatus
// < 0 leaves messages alone.
func normalizeTimes(status *v1.PodStatus, bytesPerStatus int) {
	seconds := func(t *metav1.Time) { *t = secondsCopy(*t) }
	state := func(c *v1.ContainerState) {
		if c.Running != nil {
			seconds(&c.Running.StartedAt)
		}
		if c.Terminated != nil {
			seconds(&c.Terminated.StartedAt)
			seconds(&c.Terminated.FinishedAt)
			if bytesPerStatus >= 0 && len(c.Terminated.Message) > bytesPerStatus {
				c.Terminated.Message = c.Terminated.Message[:bytesPerStatus]
			}
		}
	}
	if status.StartTime != nil {
		seconds(status.StartTime)
	}
	for i := range status.Conditions {
		seconds(&status.Conditions[i].LastProbeTime)
		seconds(&status.Conditions[i].LastTransitionTime)
	}
	for _, list := range [][]v1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses, status.EphemeralContainerStatuses} {
		for i := range list {
			state(&list[i].State)
			state(&list[i].LastTerminationState)
		}
	}
}

// secondsCopy is t.Rfc3339Copy(), which the kubelet's normalizeStatus
// uses, without its text round trip (a Format and a Parse for each of a
// status's timestamps, several times per sync) when t's offset is zero, as
// it is on a node whose local zone is UTC: the same instant truncated to
// the second, in UTC. Other zones, and years RFC 3339 cannot write, take
// the round trip.
func secondsCopy(t metav1.Time) metav1.Time {
	if _, offset := t.Zone(); offset == 0 {
		if y := t.Year(); y >= 0 && y <= 9999 {
			return metav1.Time{Time: time.Unix(t.Unix(), 0).UTC()}
		}
	}
	return t.Rfc3339Copy()
}

// NeedsUpdate reports whether status differs from old in anything the
// kubelet owns, so that callers store and write a status only on change.
// Conditions the kubelet does not own are ignored, and for the ones it owns
// (and DisruptionTarget) only status, reason and message count, not
// lastTransitionTime or lastProbeTime. Timestamps compare at second
// precision and container statuses regardless of order. A nil old always
// needs an update. Matches the kubelet's isPodStatusByKubeletEqual, applied
// after normalizeStatus as its needsReconcile does.
func NeedsUpdate(old, status *v1.PodStatus) bool {
	if old == nil {
		return true
	}
	if status == nil {
		return false
	}
	return !isPodStatusByKubeletEqual(normalizedCopy(old), normalizedCopy(status))
}

func normalizedCopy(s *v1.PodStatus) *v1.PodStatus {
	c := s.DeepCopy()
	normalizeTimes(c, -1)
	sortByName(c.ContainerStatuses)
	sortByName(c.EphemeralContainerStatuses)
	// Init containers keep their order: it is the spec's on both sides.
	return c
}

// isPodStatusByKubeletEqual matches the kubelet status manager's function of
// the same name (v1.36): the kubelet's conditions must be the same set on
// both sides, so that one that went away (PodResizeInProgress once a
// resize is done) is published. Neither argument is modified: the copy of
// old whose conditions are swapped for status's is shallow, as nothing
// below writes through it.
func isPodStatusByKubeletEqual(old, status *v1.PodStatus) bool {
	oldCopy := *old
	owned := func(c *v1.PodCondition) bool {
		return podConditionByKubelet(c.Type) || podConditionSharedByKubelet(c.Type)
	}
	ownedOld := 0
	for i := range oldCopy.Conditions {
		if owned(&oldCopy.Conditions[i]) {
			ownedOld++
		}
	}
	ownedNew := 0
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if !owned(c) {
			continue
		}
		ownedNew++
		oc := findCondition(oldCopy.Conditions, c.Type)
		if oc == nil || oc.Status != c.Status || oc.Message != c.Message || oc.Reason != c.Reason {
			return false
		}
	}
	if ownedOld != ownedNew {
		return false
	}
	oldCopy.Conditions = status.Conditions
	return apiequality.Semantic.DeepEqual(&oldCopy, status)
}

// MergePodStatus prepares status for writing over apiStatus, the status the
// API server holds. Matches the kubelet status manager's mergePodStatus:
//   - conditions the kubelet does not own are kept from apiStatus;
//     DisruptionTarget from status is written only with the transition to
//     a terminal phase;
//   - with delayTerminal (containers still running, resources not yet
//     released), a transition to a terminal phase is held back: phase,
//     reason and message stay as in apiStatus;
//   - a terminal phase forces Ready and ContainersReady False.
//
// Neither argument is modified.
func MergePodStatus(apiStatus, status v1.PodStatus, delayTerminal bool, now time.Time) v1.PodStatus {
	status = *status.DeepCopy()
	conditions := make([]v1.PodCondition, 0, len(apiStatus.Conditions)+len(status.Conditions))
	for _, c := range apiStatus.Conditions {
		if !podConditionByKubelet(c.Type) {
			conditions = append(conditions, *c.DeepCopy())
		}
	}
	toTerminal := !isTerminal(apiStatus.Phase) && isTerminal(status.Phase)
	for _, c := range status.Conditions {
		switch {
		case podConditionByKubelet(c.Type):
			conditions = append(conditions, c)
		case podConditionSharedByKubelet(c.Type) && toTerminal && !delayTerminal:
			// Sent only now, so its transition time is now too.
			updateLastTransitionTime(&status, &apiStatus, c.Type, now)
			if nc := findCondition(status.Conditions, c.Type); nc != nil {
				conditions = replaceOrAppendCondition(conditions, nc)
			}
		}
	}
	status.Conditions = conditions

	if toTerminal && delayTerminal {
		status.Phase, status.Reason, status.Message = apiStatus.Phase, apiStatus.Reason, apiStatus.Message
	}
	if isTerminal(status.Phase) {
		for _, t := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
			if c := findCondition(status.Conditions, t); c != nil && c.Status == v1.ConditionTrue {
				nc := terminalPhaseCondition(t, &v1.Pod{}, status.Phase)
				nc.ObservedGeneration = c.ObservedGeneration
				nc.LastTransitionTime = metav1.NewTime(now)
				*c = nc
			}
		}
	}
	return status
}

// CheckContainerStateTransition refuses a status in which a container that
// was terminated for good is no longer terminated: that would mean a
// container the kubelet must not restart was restarted, or a status went
// backwards. The caller drops such a status. A nil old allows everything.
// The error wraps errdefs.ErrFailedPrecondition. Matches the kubelet status
// manager's checkContainerStateTransition with ContainerRestartRules and
// RestartAllContainersOnContainerExits on: nothing is checked under the pod
// policy Always or for a pod that may restart in place; a container may
// leave its termination if the pod's OnFailure restarts a failure or its
// effective policy and rules restart it (ContainerShouldRestart); sidecars
// always may.
func CheckContainerStateTransition(old, status *v1.PodStatus, spec *v1.PodSpec) error {
	if old == nil || status == nil || spec.RestartPolicy == v1.RestartPolicyAlways || container.AllContainersCouldRestart(spec) {
		return nil
	}
	if err := checkTransitions(old.ContainerStatuses, status.ContainerStatuses, spec.Containers, spec, false); err != nil {
		return err
	}
	return checkTransitions(old.InitContainerStatuses, status.InitContainerStatuses, spec.InitContainers, spec, true)
}

// checkTransitions checks one list. An init container status without a
// spec is an error, as in the kubelet; a regular one is checked as a
// container that is not restartable.
func checkTransitions(olds, news []v1.ContainerStatus, containers []v1.Container, spec *v1.PodSpec, init bool) error {
	for _, o := range olds {
		c := findSpec(containers, o.Name)
		switch {
		case c == nil && init:
			return fmt.Errorf("found mismatch between pod spec and status, container: %v: %w", o.Name, errdefs.ErrFailedPrecondition)
		case c == nil:
			c = &v1.Container{Name: o.Name, RestartPolicy: ptrNever()}
		case init && container.IsRestartableInitContainer(c):
			continue
		}
		t := o.State.Terminated
		if t == nil || (t.ExitCode != 0 && spec.RestartPolicy == v1.RestartPolicyOnFailure) ||
			container.ContainerShouldRestart(c, spec, t.ExitCode) {
			continue
		}
		for _, n := range news {
			if n.Name == o.Name && n.State.Terminated == nil {
				return fmt.Errorf("terminated container %q attempted illegal transition to non-terminated state: %w",
					n.Name, errdefs.ErrFailedPrecondition)
			}
		}
	}
	return nil
}

func ptrNever() *v1.ContainerRestartPolicy {
	never := v1.ContainerRestartPolicyNever
	return &never
}
