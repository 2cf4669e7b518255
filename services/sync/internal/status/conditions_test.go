package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestNeedToReconcilePodReadiness(t *testing.T) {
	const gate = v1.PodConditionType("example.com/lb")
	notReadyMsg := `corresponding condition of pod readiness gate "example.com/lb" does not exist.`
	// pod is a running pod whose one container is ready, with the given
	// readiness gates, gate condition and Ready condition.
	pod := func(gates []v1.PodReadinessGate, gateStatus v1.ConditionStatus, ready *v1.PodCondition) *v1.Pod {
		p := newPod(v1.RestartPolicyAlways, "a")
		p.Spec.ReadinessGates = gates
		p.Status.Phase = v1.PodRunning
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "a", Ready: true}}
		if gateStatus != "" {
			p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: gate, Status: gateStatus})
		}
		if ready != nil {
			p.Status.Conditions = append(p.Status.Conditions, *ready)
		}
		return p
	}
	gates := []v1.PodReadinessGate{{ConditionType: gate}}
	readyFalse := &v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: ReadinessGatesNotReady, Message: notReadyMsg}
	readyTrue := &v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
	for _, tc := range []struct {
		desc string
		pod  *v1.Pod
		want bool
	}{
		{desc: "no readiness gates", pod: pod(nil, v1.ConditionTrue, readyFalse)},
		{desc: "no Ready condition yet", pod: pod(gates, v1.ConditionTrue, nil)},
		{desc: "the gate turned True while Ready is False", pod: pod(gates, v1.ConditionTrue, readyFalse), want: true},
		{desc: "the gate turned False while Ready is True", pod: pod(gates, v1.ConditionFalse, readyTrue), want: true},
		{desc: "Ready already follows a True gate", pod: pod(gates, v1.ConditionTrue, readyTrue)},
		{desc: "Ready already follows a missing gate", pod: pod(gates, "", readyFalse)},
		{desc: "the gate's condition changed, so does the message", pod: pod(gates, v1.ConditionFalse, readyFalse), want: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := NeedToReconcilePodReadiness(tc.pod); got != tc.want {
				t.Errorf("NeedToReconcilePodReadiness = %v, want %v", got, tc.want)
			}
		})
	}
}
