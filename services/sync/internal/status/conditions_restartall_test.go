package status

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// TestGenerateAllContainersRestartingCondition ports the kubelet's table of
// the same name (pkg/kubelet/status/generate_test.go, v1.36.3).
func TestGenerateAllContainersRestartingCondition(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "container1"}, {
		Name: "trigger", RestartPolicy: &never,
		RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}},
	}}}}
	marked := &v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue}}}
	started := v1.PodCondition{Status: v1.ConditionTrue, Reason: RestartAllContainersStarted, Message: "container exited with restart policy rule"}
	for _, tc := range []struct {
		desc      string
		podStatus *container.PodStatus
		old       *v1.PodStatus
		phase     v1.PodPhase
		want      v1.PodCondition
	}{
		{desc: "pod pending", phase: v1.PodPending, want: v1.PodCondition{Status: v1.ConditionFalse}},
		{desc: "pod failed", phase: v1.PodFailed, want: v1.PodCondition{Status: v1.ConditionFalse, Reason: PodFailed}},
		{desc: "pod succeeded", phase: v1.PodSucceeded, want: v1.PodCondition{Status: v1.ConditionFalse, Reason: PodCompleted}},
		{desc: "container triggers RestartAllContainers rule", phase: v1.PodRunning, want: started,
			podStatus: &container.PodStatus{ContainerStatuses: []*container.Status{
				{Name: "container", State: container.ContainerStateRunning},
				{Name: "trigger", State: container.ContainerStateExited, ExitCode: 42},
			}}},
		{desc: "container triggres RestartAllContainers rule, cleaning up", phase: v1.PodRunning, old: marked, want: started,
			podStatus: &container.PodStatus{ContainerStatuses: []*container.Status{
				{Name: "container", State: container.ContainerStateExited},
				{Name: "trigger", State: container.ContainerStateExited, ExitCode: 42},
			}}},
		{desc: "container triggres RestartAllContainers rule, cleaned up", phase: v1.PodPending, old: marked,
			want: v1.PodCondition{Status: v1.ConditionFalse}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ps := tc.podStatus
			if ps == nil {
				ps = &container.PodStatus{}
			}
			tc.want.Type = v1.AllContainersRestarting
			if got := generateAllContainersRestartingCondition(pod, ps, tc.old, tc.phase); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("condition = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestPodInitializedStaysTrue covers the RestartAllContainersOnContainerExits
// part of the kubelet's GeneratePodInitializedCondition: once True, an init
// container sent back to waiting (an in-place restart) does not make it
// False.
func TestPodInitializedStaysTrue(t *testing.T) {
	pod := withInit(newPod(v1.RestartPolicyAlways, "a"), "init")
	waiting := []v1.ContainerStatus{csRestartingAll("init"), csRestartingAll("a")}
	for _, tc := range []struct {
		desc string
		old  v1.ConditionStatus
		want v1.ConditionStatus
	}{
		{desc: "initialized before: stays True", old: v1.ConditionTrue, want: v1.ConditionTrue},
		{desc: "not initialized before: False", old: v1.ConditionFalse, want: v1.ConditionFalse},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			old := &v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.PodInitialized, Status: tc.old}}}
			if got := generatePodInitializedCondition(pod, old, waiting, v1.PodRunning); got.Status != tc.want {
				t.Errorf("Initialized = %s (%s), want %s", got.Status, got.Message, tc.want)
			}
		})
	}
}

// TestGenerateAPIPodStatusRestartAllContainers walks one in-place restart
// through GenerateAPIPodStatus, as the kubelet's syncPod sees it: the
// trigger exits (condition True, pod Running), the runtime is emptied
// (condition False, every container waiting RestartingAllContainers, one
// more restart each, still Running and Initialized), then the containers
// run again.
func TestGenerateAPIPodStatusRestartAllContainers(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	pod := withInit(newPod(v1.RestartPolicyNever, "app", "trigger"), "init")
	pod.Spec.Containers[1].RestartPolicy = &never
	pod.Spec.Containers[1].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	in := Inputs{Clock: &fixedClock{now: t0}}

	first := GenerateAPIPodStatus(pod, rt(exited("init", "i1", 0, 0, 0), running("app", "a1", time.Second, 0), running("trigger", "t1", time.Second, 0)), in)
	in.OldStatus = &first
	triggered := GenerateAPIPodStatus(pod, rt(exited("init", "i1", 0, 0, 0), running("app", "a1", time.Second, 0), exited("trigger", "t1", time.Second, 42, 0)), in)
	if c := condition(triggered, v1.AllContainersRestarting); c == nil || c.Status != v1.ConditionTrue || triggered.Phase != v1.PodRunning {
		t.Fatalf("after the trigger exited: phase %s, condition %+v; want Running and True", triggered.Phase, c)
	}
	in.OldStatus = &triggered
	cleaned := GenerateAPIPodStatus(pod, rt(), in)
	if c := condition(cleaned, v1.AllContainersRestarting); c == nil || c.Status != v1.ConditionFalse {
		t.Errorf("after removal: condition %+v, want False", c)
	}
	if cleaned.Phase != v1.PodRunning {
		t.Errorf("after removal: phase %s, want Running", cleaned.Phase)
	}
	if c := condition(cleaned, v1.PodInitialized); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("after removal: Initialized %+v, want True", c)
	}
	for _, s := range append(cleaned.InitContainerStatuses, cleaned.ContainerStatuses...) {
		if s.State.Waiting == nil || s.State.Waiting.Reason != RestartingAllContainers || s.RestartCount != 1 {
			t.Errorf("after removal: %s is %s with %d restarts, want waiting %s with 1", s.Name, stateString(s.State), s.RestartCount, RestartingAllContainers)
		}
	}
	in.OldStatus = &cleaned
	again := GenerateAPIPodStatus(pod, rt(exited("init", "i2", 2*time.Minute, 0, 1)), in)
	if c := condition(again, v1.AllContainersRestarting); c == nil || c.Status != v1.ConditionFalse {
		t.Errorf("starting again: condition %+v, want False", c)
	}
}
