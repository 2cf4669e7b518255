package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

var (
	ctrAlways    = v1.ContainerRestartPolicyAlways
	ctrOnFailure = v1.ContainerRestartPolicyOnFailure
	ctrNever     = v1.ContainerRestartPolicyNever
)

// The kubelet tests' status builders: failedState exits -1.
func csFailed(name string) v1.ContainerStatus { return csExited(name, -1) }

func csSucceeded(name string) v1.ContainerStatus { return csExited(name, 0) }

// csRestartingAll is a container removed by an in-place restart, the
// kubelet tests' waitingStateWithRestartingAllContainers.
func csRestartingAll(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name,
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: RestartingAllContainers}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: RestartingAllContainers, ExitCode: 137}},
	}
}

type phaseCase struct {
	desc     string
	spec     v1.PodSpec
	statuses []v1.ContainerStatus
	want     v1.PodPhase
}

// runPhaseCases runs getPhase as the kubelet's tables do: not terminal,
// podHasInitialized true.
func runPhaseCases(t *testing.T, cases []phaseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := &v1.Pod{Spec: tc.spec, Status: v1.PodStatus{ContainerStatuses: tc.statuses}}
			if got := getPhase(pod, tc.statuses, false, true); got != tc.want {
				t.Errorf("getPhase = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestPodPhaseWithContainerRestartPolicy ports the kubelet's table of the
// same name (v1.36.3, ContainerRestartRules on).
func TestPodPhaseWithContainerRestartPolicy(t *testing.T) {
	runPhaseCases(t, []phaseCase{
		{desc: "container with restart policy Never failed",
			spec:     v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "failed-container", RestartPolicy: &ctrNever}}},
			statuses: []v1.ContainerStatus{csFailed("failed-container")}, want: v1.PodFailed},
		{desc: "container with restart policy OnFailure failed",
			spec:     v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "failed-container", RestartPolicy: &ctrOnFailure}}},
			statuses: []v1.ContainerStatus{csFailed("failed-container")}, want: v1.PodRunning},
		{desc: "container with restart policy Always failed",
			spec:     v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "failed-container", RestartPolicy: &ctrAlways}}},
			statuses: []v1.ContainerStatus{csFailed("failed-container")}, want: v1.PodRunning},
		{desc: "At least one container with restartable container-level restart policy failed",
			spec:     v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{{Name: "containerA", RestartPolicy: &ctrAlways}, {Name: "containerB"}}},
			statuses: []v1.ContainerStatus{csSucceeded("containerA"), csFailed("containerB")}, want: v1.PodRunning},
		{desc: "All containers without restartable container-level restart policy failed",
			spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{
				{Name: "containerA", RestartPolicy: &ctrNever}, {Name: "containerB", RestartPolicy: &ctrOnFailure}}},
			statuses: []v1.ContainerStatus{csFailed("containerA"), csSucceeded("containerB")}, want: v1.PodFailed},
		{desc: "All containers succeeded",
			spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{
				{Name: "containerA", RestartPolicy: &ctrNever}, {Name: "containerB", RestartPolicy: &ctrOnFailure}}},
			statuses: []v1.ContainerStatus{csSucceeded("containerA"), csSucceeded("containerB")}, want: v1.PodSucceeded},
	})
}

// TestPodPhaseWithContainerRestartPolicyInitContainers ports the kubelet's
// table of the same name.
func TestPodPhaseWithContainerRestartPolicyInitContainers(t *testing.T) {
	init := func(policy *v1.ContainerRestartPolicy, podPolicy v1.RestartPolicy) v1.PodSpec {
		return v1.PodSpec{RestartPolicy: podPolicy, InitContainers: []v1.Container{{Name: "failed-container", RestartPolicy: policy}},
			Containers: []v1.Container{{Name: "container"}}}
	}
	runPhaseCases(t, []phaseCase{
		{desc: "init container with restart policy Never failed", spec: init(&ctrNever, v1.RestartPolicyAlways),
			statuses: []v1.ContainerStatus{csFailed("failed-container")}, want: v1.PodFailed},
		{desc: "init container with restart policy OnFailure failed", spec: init(&ctrOnFailure, v1.RestartPolicyNever),
			statuses: []v1.ContainerStatus{csFailed("failed-container")}, want: v1.PodPending},
		{desc: "container with restart policy Always failed", spec: init(&ctrAlways, v1.RestartPolicyNever),
			statuses: []v1.ContainerStatus{csFailed("failed-container")}, want: v1.PodPending},
	})
}

// TestPodPhaseWithRestartAllContainers ports the kubelet's table of the
// same name: a container that triggered an in-place restart, or was
// removed by one, is on its way back, so the pod neither fails nor
// succeeds.
func TestPodPhaseWithRestartAllContainers(t *testing.T) {
	rules := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	withRule := v1.Container{Name: "container", RestartPolicy: &ctrNever, RestartPolicyRules: rules}
	sidecarWithRule := v1.Container{Name: "container", RestartPolicy: &ctrAlways, RestartPolicyRules: rules}
	regular := v1.Container{Name: "regular"}
	never := v1.RestartPolicyNever
	statuses := func(s ...v1.ContainerStatus) []v1.ContainerStatus { return s }
	runPhaseCases(t, []phaseCase{
		// Trigger RestartAllContainers.
		{desc: "regular container triggers RestartAllContainers", spec: v1.PodSpec{RestartPolicy: never, Containers: []v1.Container{withRule}},
			statuses: statuses(csExited("container", 42)), want: v1.PodRunning},
		{desc: "init container triggers RestartAllContainers", spec: v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{withRule}},
			statuses: statuses(csExited("container", 42), csWaiting("regular")), want: v1.PodPending},
		{desc: "sidecar container triggers RestartAllContainers", spec: v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{sidecarWithRule}, Containers: []v1.Container{regular}},
			statuses: statuses(csExited("container", 42), csWaiting("regular")), want: v1.PodPending},
		{desc: "sidecar container triggers RestartAllContainers, kills another init container",
			spec:     v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{sidecarWithRule, {Name: "init"}}, Containers: []v1.Container{regular}},
			statuses: statuses(csExited("container", 42), csWaiting("init"), csWaiting("regular")), want: v1.PodPending},
		// Cleanup phase.
		{desc: "regular container triggers RestartAllContainers, cleaned up", spec: v1.PodSpec{RestartPolicy: never, Containers: []v1.Container{withRule}},
			statuses: statuses(csRestartingAll("container")), want: v1.PodRunning},
		{desc: "init container triggers RestartAllContainers, cleaned up", spec: v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{withRule}},
			statuses: statuses(csRestartingAll("container"), csWaiting("regular")), want: v1.PodPending},
		{desc: "sidecar container triggers RestartAllContainers, cleaned up", spec: v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{sidecarWithRule}, Containers: []v1.Container{regular}},
			statuses: statuses(csRestartingAll("container"), csWaiting("regular")), want: v1.PodPending},
		{desc: "sidecar container triggers RestartAllContainers, kills another init container, cleaned up",
			spec:     v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{sidecarWithRule, {Name: "init"}}, Containers: []v1.Container{regular}},
			statuses: statuses(csRestartingAll("container"), csRestartingAll("container"), csWaiting("regular")), want: v1.PodPending},
		// Startup phase.
		{desc: "regular container triggered RestartAllContainers; init container succeeded",
			spec:     v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{{Name: "init"}}, Containers: []v1.Container{withRule}},
			statuses: statuses(csSucceeded("init"), csRestartingAll("container")), want: v1.PodRunning},
		{desc: "regular container triggered RestartAllContainers; init container failed",
			spec:     v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{{Name: "init"}}, Containers: []v1.Container{withRule}},
			statuses: statuses(csFailed("init"), csRestartingAll("container")), want: v1.PodFailed},
		{desc: "init container triggered RestartAllContainers",
			spec:     v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{withRule}, Containers: []v1.Container{regular}},
			statuses: statuses(csExited("container", 42), csWaiting("regular")), want: v1.PodPending},
		{desc: "init container triggered RestartAllContainers; init container succeeds",
			spec:     v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{withRule}, Containers: []v1.Container{regular}},
			statuses: statuses(csSucceeded("container"), csWaiting("regular")), want: v1.PodPending},
		{desc: "sidecar container triggered RestartAllContainers kills regular container",
			spec:     v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{sidecarWithRule}, Containers: []v1.Container{regular}},
			statuses: statuses(csRestartingAll("container"), csRestartingAll("regular")), want: v1.PodRunning},
		{desc: "sidecar container triggered RestartAllContainers kills regular container; sidecar running",
			spec:     v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{sidecarWithRule}, Containers: []v1.Container{regular}},
			statuses: statuses(csRunning("container"), csRestartingAll("regular")), want: v1.PodRunning},
		{desc: "sidecar container triggered RestartAllContainers; kills init container; sidecar running",
			spec:     v1.PodSpec{RestartPolicy: never, InitContainers: []v1.Container{sidecarWithRule, {Name: "init"}}, Containers: []v1.Container{regular}},
			statuses: statuses(csRunning("container"), csRestartingAll("container"), csWaiting("regular")), want: v1.PodPending},
		// Not in the kubelet's table: the exit code not matching.
		{desc: "regular container exits with another code: Never holds, Failed", spec: v1.PodSpec{RestartPolicy: never, Containers: []v1.Container{withRule}},
			statuses: statuses(csExited("container", 1)), want: v1.PodFailed},
	})
}
