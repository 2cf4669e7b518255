package eviction

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pressureConditions are the node conditions the eviction manager owns, in
// the order it reports them. A fixed order keeps the admission message
// ("The node had condition: [MemoryPressure DiskPressure]. ") stable; the
// kubelet's order comes from map iteration.
var pressureConditions = []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}

// conditionText is the reason and message the kubelet's node status setters
// (nodestatus.MemoryPressureCondition, DiskPressureCondition,
// PIDPressureCondition) write for each condition and status.
var conditionText = map[v1.NodeConditionType]struct{ trueReason, trueMessage, falseReason, falseMessage string }{
	v1.NodeMemoryPressure: {
		"KubeletHasInsufficientMemory", "kubelet has insufficient memory available",
		"KubeletHasSufficientMemory", "kubelet has sufficient memory available",
	},
	v1.NodeDiskPressure: {
		"KubeletHasDiskPressure", "kubelet has disk pressure",
		"KubeletHasNoDiskPressure", "kubelet has no disk pressure",
	},
	v1.NodePIDPressure: {
		"KubeletHasInsufficientPID", "kubelet has insufficient PID available",
		"KubeletHasSufficientPID", "kubelet has sufficient PID available",
	},
}

// nodeConditions returns the conditions the thresholds imply, each once (the
// kubelet's nodeConditions), in pressureConditions order.
func nodeConditions(thresholds []Threshold) []v1.NodeConditionType {
	var results []v1.NodeConditionType
	for _, t := range thresholds {
		if c, ok := signalToNodeCondition[t.Signal]; ok && !slices.Contains(results, c) {
			results = append(results, c)
		}
	}
	sortConditions(results)
	return results
}

func sortConditions(cs []v1.NodeConditionType) {
	slices.SortFunc(cs, func(a, b v1.NodeConditionType) int {
		return slices.Index(pressureConditions, a) - slices.Index(pressureConditions, b)
	})
}

// nodeConditionsObservedAt records when each condition was last implied by
// a met threshold.
type nodeConditionsObservedAt map[v1.NodeConditionType]time.Time

// nodeConditionsLastObservedAt is the kubelet's function of the same name:
// conditions seen now get now, the others keep their old time.
func nodeConditionsLastObservedAt(conditions []v1.NodeConditionType, last nodeConditionsObservedAt, now time.Time) nodeConditionsObservedAt {
	results := nodeConditionsObservedAt{}
	for _, c := range conditions {
		results[c] = now
	}
	for c, at := range last {
		if _, ok := results[c]; !ok {
			results[c] = at
		}
	}
	return results
}

// nodeConditionsObservedSince is the kubelet's function of the same name:
// a condition stays in force until period has passed since it was last
// observed, which keeps a node that hovers around a threshold from flapping.
func nodeConditionsObservedSince(observedAt nodeConditionsObservedAt, period time.Duration, now time.Time) []v1.NodeConditionType {
	var results []v1.NodeConditionType
	for c, at := range observedAt {
		if now.Sub(at) < period {
			results = append(results, c)
		}
	}
	sortConditions(results)
	return results
}

// nodeConditionState tracks one pressure condition for Conditions().
type nodeConditionState struct {
	status             v1.ConditionStatus
	lastHeartbeatTime  time.Time
	lastTransitionTime time.Time
}

// updateConditionStates sets each pressure condition's status from active,
// moving the transition time only when the status changes, as the kubelet's
// setters do.
func updateConditionStates(states map[v1.NodeConditionType]*nodeConditionState, active []v1.NodeConditionType, now time.Time) {
	for _, c := range pressureConditions {
		st := states[c]
		status := v1.ConditionFalse
		if slices.Contains(active, c) {
			status = v1.ConditionTrue
		}
		if st.status != status {
			st.status = status
			st.lastTransitionTime = now
		}
		st.lastHeartbeatTime = now
	}
}

// conditionsFromStates renders the states as node conditions.
func conditionsFromStates(states map[v1.NodeConditionType]*nodeConditionState) []v1.NodeCondition {
	out := make([]v1.NodeCondition, 0, len(pressureConditions))
	for _, c := range pressureConditions {
		st := states[c]
		text := conditionText[c]
		reason, message := text.falseReason, text.falseMessage
		if st.status == v1.ConditionTrue {
			reason, message = text.trueReason, text.trueMessage
		}
		out = append(out, v1.NodeCondition{
			Type:               c,
			Status:             st.status,
			LastHeartbeatTime:  metav1.NewTime(st.lastHeartbeatTime),
			LastTransitionTime: metav1.NewTime(st.lastTransitionTime),
			Reason:             reason,
			Message:            message,
		})
	}
	return out
}
