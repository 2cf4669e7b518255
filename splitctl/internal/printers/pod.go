// Package printers turns core/v1 Pods and Events into what kubectl prints:
// the get table (NAME READY STATUS RESTARTS AGE), the describe layout and the
// events table. The rules are kubectl's, so a splitctl user reads the same
// STATUS a kubectl user would for the same pod.
package printers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// nodeUnreachablePodReason is the reason the node lifecycle controller sets on
// pods of a lost node (k8s.io/kubernetes/pkg/util/node.NodeUnreachablePodReason).
const nodeUnreachablePodReason = "NodeLost"

// PodRow is one row of `get pods`: the cells kubectl's printPod computes.
type PodRow struct {
	Namespace string
	Name      string
	// Ready is "ready/total", counting restartable init containers (sidecars).
	Ready string
	// Status is kubectl's STATUS column, e.g. "Init:0/1", "CrashLoopBackOff".
	Status string
	// Restarts is the restart count, with "(5m ago)" when a restart is known.
	Restarts string
	Age      string
	// IP, Node, NominatedNode and ReadinessGates are the -o wide columns;
	// "<none>" when unknown.
	IP             string
	Node           string
	NominatedNode  string
	ReadinessGates string
}

// NewPodRow computes the row for pod as of now. It follows kubectl's printPod
// (k8s.io/kubernetes/pkg/printers/internalversion/printers.go), including the
// restartable init container rules added with sidecars.
func NewPodRow(pod *corev1.Pod, now time.Time) PodRow {
	restarts := 0
	sidecarRestarts := 0
	totalContainers := len(pod.Spec.Containers)
	readyContainers := 0
	var lastRestart, lastSidecarRestart time.Time

	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	// A pod held by scheduling gates reads SchedulingGated whatever its phase.
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}

	initContainers := make(map[string]*corev1.Container, len(pod.Spec.InitContainers))
	for i := range pod.Spec.InitContainers {
		initContainers[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
		if isRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			totalContainers++
		}
	}

	initializing := false
	for i := range pod.Status.InitContainerStatuses {
		cs := pod.Status.InitContainerStatuses[i]
		restarts += int(cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil && lastRestart.Before(t.FinishedAt.Time) {
			lastRestart = t.FinishedAt.Time
		}
		sidecar := isRestartableInitContainer(initContainers[cs.Name])
		if sidecar {
			sidecarRestarts += int(cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil && lastSidecarRestart.Before(t.FinishedAt.Time) {
				lastSidecarRestart = t.FinishedAt.Time
			}
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case sidecar && cs.Started != nil && *cs.Started:
			// A started sidecar does not hold up initialization.
			if cs.Ready {
				readyContainers++
			}
			continue
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			switch {
			case t.Reason != "":
				reason = "Init:" + t.Reason
			case t.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
			initializing = true
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + cs.State.Waiting.Reason
			initializing = true
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
			initializing = true
		}
		break
	}

	if !initializing || podInitialized(&pod.Status) {
		// Once initialized, only sidecar restarts count among init containers.
		restarts = sidecarRestarts
		lastRestart = lastSidecarRestart
		hasRunning := false
		// Backwards, as kubectl does, so the first container's reason wins.
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := pod.Status.ContainerStatuses[i]
			restarts += int(cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil && lastRestart.Before(t.FinishedAt.Time) {
				lastRestart = t.FinishedAt.Time
			}
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				reason = cs.State.Waiting.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
				reason = cs.State.Terminated.Reason
			case cs.State.Terminated != nil && cs.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", cs.State.Terminated.Signal)
			case cs.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", cs.State.Terminated.ExitCode)
			case cs.Ready && cs.State.Running != nil:
				hasRunning = true
				readyContainers++
			}
		}
		// A pod with a completed container and a running one is not Completed.
		if reason == "Completed" && hasRunning {
			if podReady(pod.Status.Conditions) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil && pod.Status.Reason == nodeUnreachablePodReason {
		reason = "Unknown"
	} else if pod.DeletionTimestamp != nil && !isPodPhaseTerminal(pod.Status.Phase) {
		reason = "Terminating"
	}

	restartsStr := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsStr = fmt.Sprintf("%d (%s ago)", restarts, Since(lastRestart, now))
	}

	row := PodRow{
		Namespace:      pod.Namespace,
		Name:           pod.Name,
		Ready:          fmt.Sprintf("%d/%d", readyContainers, totalContainers),
		Status:         reason,
		Restarts:       restartsStr,
		Age:            Since(pod.CreationTimestamp.Time, now),
		IP:             "<none>",
		Node:           "<none>",
		NominatedNode:  "<none>",
		ReadinessGates: "<none>",
	}
	if len(pod.Status.PodIPs) > 0 && pod.Status.PodIPs[0].IP != "" {
		row.IP = pod.Status.PodIPs[0].IP
	} else if pod.Status.PodIP != "" {
		row.IP = pod.Status.PodIP
	}
	if pod.Spec.NodeName != "" {
		row.Node = pod.Spec.NodeName
	}
	if pod.Status.NominatedNodeName != "" {
		row.NominatedNode = pod.Status.NominatedNodeName
	}
	if len(pod.Spec.ReadinessGates) > 0 {
		trueGates := 0
		for _, g := range pod.Spec.ReadinessGates {
			for _, c := range pod.Status.Conditions {
				if c.Type == g.ConditionType {
					if c.Status == corev1.ConditionTrue {
						trueGates++
					}
					break
				}
			}
		}
		row.ReadinessGates = fmt.Sprintf("%d/%d", trueGates, len(pod.Spec.ReadinessGates))
	}
	return row
}

// Since prints the time from t to now as kubectl's translateTimestampSince:
// a human duration, or "<unknown>" for a zero time.
func Since(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// isRestartableInitContainer matches podutil.IsRestartableInitContainer: an
// init container with restartPolicy Always is a sidecar.
func isRestartableInitContainer(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// podInitialized matches kubectl's isPodInitializedConditionTrue.
func podInitialized(status *corev1.PodStatus) bool {
	for _, c := range status.Conditions {
		if c.Type == corev1.PodInitialized {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podReady matches kubectl's hasPodReadyCondition.
func podReady(conditions []corev1.PodCondition) bool {
	for _, c := range conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// isPodPhaseTerminal matches podutil.IsPodPhaseTerminal.
func isPodPhaseTerminal(phase corev1.PodPhase) bool {
	return phase == corev1.PodFailed || phase == corev1.PodSucceeded
}
