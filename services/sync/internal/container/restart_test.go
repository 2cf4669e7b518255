package container

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The tables below are the kubelet v1.36.3's own cases (pkg/api/v1/pod/
// util_test.go and pkg/kubelet/container/helpers_test.go) with the
// ContainerRestartRules and RestartAllContainersOnContainerExits gates on,
// so that sync and the kubelet disagree visibly if either changes.

var (
	policyAlways    = v1.ContainerRestartPolicyAlways
	policyOnFailure = v1.ContainerRestartPolicyOnFailure
	policyNever     = v1.ContainerRestartPolicyNever
)

func exitRule(action v1.ContainerRestartRuleAction, op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: action, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
}

// TestIsContainerRestartable ports the kubelet's TestIsContainerRestartable.
func TestIsContainerRestartable(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		podPolicy v1.RestartPolicy
		container v1.Container
		want      bool
	}{
		{desc: "Container: Rule action 'Restart' should always be true", podPolicy: v1.RestartPolicyNever,
			container: v1.Container{RestartPolicy: &policyNever, RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart}}}, want: true},
		{desc: "Container: Policy 'Always' is restartable", podPolicy: v1.RestartPolicyNever, container: v1.Container{RestartPolicy: &policyAlways}, want: true},
		{desc: "Container: Policy 'OnFailure' is restartable", podPolicy: v1.RestartPolicyNever, container: v1.Container{RestartPolicy: &policyOnFailure}, want: true},
		{desc: "Container: Policy 'Never' is not restartable", podPolicy: v1.RestartPolicyAlways, container: v1.Container{RestartPolicy: &policyNever}, want: false},
		{desc: "Pod Fallback: Policy 'Always' is restartable", podPolicy: v1.RestartPolicyAlways, want: true},
		{desc: "Pod Fallback: Policy 'OnFailure' is restartable", podPolicy: v1.RestartPolicyOnFailure, want: true},
		{desc: "Pod Fallback: Policy 'Never' is not restartable", podPolicy: v1.RestartPolicyNever, want: false},
		{desc: "Pod Fallback: Default empty policy is restartable (since it's not 'Never')", want: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := IsContainerRestartable(&v1.PodSpec{RestartPolicy: tc.podPolicy}, &tc.container); got != tc.want {
				t.Errorf("IsContainerRestartable = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestContainerShouldRestart ports the kubelet's
// TestContainerHasRestartablePolicy (podutil.ContainerShouldRestart).
func TestContainerShouldRestart(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		container v1.Container
		podPolicy v1.RestartPolicy
		exitCode  int32
		want      bool
	}{
		{desc: "Rule: 'In' operator matches with 'Restart' action", container: v1.Container{RestartPolicy: &policyNever,
			RestartPolicyRules: []v1.ContainerRestartRule{exitRule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42, 50, 60)}},
			exitCode: 42, want: true},
		{desc: "Rule: 'NotIn' operator matches with 'Restart' action", container: v1.Container{RestartPolicy: &policyNever,
			RestartPolicyRules: []v1.ContainerRestartRule{exitRule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpNotIn, 0, 1, 2)}},
			exitCode: 99, want: true},
		{desc: "Rule: 'In' operator matches with 'RestartAllContainers' action", container: v1.Container{RestartPolicy: &policyNever,
			RestartPolicyRules: []v1.ContainerRestartRule{exitRule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpIn, 42, 50, 60)}},
			exitCode: 42, want: true},
		{desc: "Rule: 'In' operator does not match, should fall back to container policy", container: v1.Container{RestartPolicy: &policyNever,
			RestartPolicyRules: []v1.ContainerRestartRule{exitRule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 10, 20)}},
			exitCode: 30, want: false},
		{desc: "Rule: 'NotIn' operator does not match, should fall back to container policy", container: v1.Container{RestartPolicy: &policyNever,
			RestartPolicyRules: []v1.ContainerRestartRule{exitRule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpNotIn, 10, 20)}},
			exitCode: 10, want: false},
		{desc: "Container Policy: 'Always'", container: v1.Container{RestartPolicy: &policyAlways}, podPolicy: v1.RestartPolicyNever, exitCode: 0, want: true},
		{desc: "Container Policy: 'OnFailure' with exit code 0", container: v1.Container{RestartPolicy: &policyOnFailure}, podPolicy: v1.RestartPolicyNever, exitCode: 0, want: false},
		{desc: "Container Policy: 'OnFailure' with non-zero exit code", container: v1.Container{RestartPolicy: &policyOnFailure}, podPolicy: v1.RestartPolicyNever, exitCode: 1, want: true},
		{desc: "Container Policy: 'Never' should return false", container: v1.Container{RestartPolicy: &policyNever}, podPolicy: v1.RestartPolicyAlways, exitCode: 1, want: false},
		{desc: "Pod Policy: Fallback to pod 'Always'", podPolicy: v1.RestartPolicyAlways, exitCode: 0, want: true},
		{desc: "Pod Policy: Fallback to pod 'OnFailure' with non-zero exit code", podPolicy: v1.RestartPolicyOnFailure, exitCode: 1, want: true},
		{desc: "Pod Policy: Fallback to pod 'Never'", podPolicy: v1.RestartPolicyNever, exitCode: 1, want: false},
		{desc: "Pod Policy: Fallback with no policies specified should return true", exitCode: 0, want: true},
		// Not in the kubelet's table, but its code: rules are only read
		// with a container-level policy.
		{desc: "rules without a container policy are not read", podPolicy: v1.RestartPolicyNever, container: v1.Container{
			RestartPolicyRules: []v1.ContainerRestartRule{exitRule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42)}},
			exitCode: 42, want: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := ContainerShouldRestart(&tc.container, &v1.PodSpec{RestartPolicy: tc.podPolicy}, tc.exitCode); got != tc.want {
				t.Errorf("ContainerShouldRestart = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestAllContainersCouldRestart ports the kubelet's table of the same name.
func TestAllContainersCouldRestart(t *testing.T) {
	rules := []v1.ContainerRestartRule{exitRule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpIn, 1)}
	for _, tc := range []struct {
		desc string
		spec *v1.PodSpec
		want bool
	}{
		{desc: "Pod with rules in init containers", spec: &v1.PodSpec{InitContainers: []v1.Container{{RestartPolicyRules: rules}}}, want: true},
		{desc: "Pod with rules in sidecar containers", spec: &v1.PodSpec{InitContainers: []v1.Container{{RestartPolicy: &policyAlways, RestartPolicyRules: rules}}}, want: true},
		{desc: "Pod with rules in regular containers", spec: &v1.PodSpec{Containers: []v1.Container{{RestartPolicy: &policyAlways, RestartPolicyRules: rules}}}, want: true},
		{desc: "Pod without rules", spec: &v1.PodSpec{}, want: false},
		{desc: "nil spec", spec: nil, want: false},
		{desc: "Restart rules only", spec: &v1.PodSpec{Containers: []v1.Container{{RestartPolicy: &policyNever,
			RestartPolicyRules: []v1.ContainerRestartRule{exitRule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 1)}}}}, want: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := AllContainersCouldRestart(tc.spec); got != tc.want {
				t.Errorf("AllContainersCouldRestart = %t, want %t", got, tc.want)
			}
		})
	}
}

// TestFindMatchingContainerRestartRule ports the kubelet's table.
func TestFindMatchingContainerRestartRule(t *testing.T) {
	ruleIn := exitRule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42, 50, 60)
	ruleNotIn := exitRule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpNotIn, 0, 1, 2)
	ruleIn42 := exitRule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42)
	for _, tc := range []struct {
		desc      string
		rules     []v1.ContainerRestartRule
		exitCode  int32
		wantFound bool
		wantRule  v1.ContainerRestartRule
	}{
		{desc: "a rule with op In matches", rules: []v1.ContainerRestartRule{ruleIn}, exitCode: 42, wantFound: true, wantRule: ruleIn},
		{desc: "a rule with op NotIn matches", rules: []v1.ContainerRestartRule{ruleNotIn}, exitCode: 99, wantFound: true, wantRule: ruleNotIn},
		{desc: "matches the first rule if two rules both matched", rules: []v1.ContainerRestartRule{ruleIn, ruleIn42}, exitCode: 42, wantFound: true, wantRule: ruleIn},
		{desc: "no rules matched", rules: []v1.ContainerRestartRule{ruleIn}, exitCode: 100},
		{desc: "no rules defined", exitCode: 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rule, found := FindMatchingContainerRestartRule(&v1.Container{RestartPolicyRules: tc.rules}, tc.exitCode)
			if found != tc.wantFound || !reflect.DeepEqual(rule, tc.wantRule) {
				t.Errorf("FindMatchingContainerRestartRule = %+v, %t; want %+v, %t", rule, found, tc.wantRule, tc.wantFound)
			}
		})
	}
}

// TestShouldAllContainersRestart ports the kubelet's table, plus the API
// status path it does not cover.
func TestShouldAllContainersRestart(t *testing.T) {
	restartAll := exitRule(v1.ContainerRestartRuleActionRestartAllContainers, v1.ContainerRestartRuleOnExitCodesOpIn, 42)
	marked := v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue}
	withRule := func(name string, policy *v1.ContainerRestartPolicy) v1.Container {
		return v1.Container{Name: name, RestartPolicy: policy, RestartPolicyRules: []v1.ContainerRestartRule{restartAll}}
	}
	exited := func(name string, code int) *PodStatus {
		return &PodStatus{ContainerStatuses: []*Status{{Name: name, State: ContainerStateExited, ExitCode: code}}}
	}
	for _, tc := range []struct {
		desc      string
		spec      v1.PodSpec
		podStatus *PodStatus
		api       *v1.PodStatus
		want      bool
	}{
		{desc: "pod marked with condition", spec: v1.PodSpec{Containers: []v1.Container{{Name: "regular", RestartPolicy: &policyNever}}},
			podStatus: &PodStatus{ContainerStatuses: []*Status{{Name: "regular", State: ContainerStateRunning}}},
			api:       &v1.PodStatus{Conditions: []v1.PodCondition{marked}}, want: true},
		{desc: "regular container exited with matching rules", spec: v1.PodSpec{Containers: []v1.Container{withRule("regular", &policyNever)}},
			podStatus: exited("regular", 42), want: true},
		{desc: "init container exited with matching rules", spec: v1.PodSpec{InitContainers: []v1.Container{withRule("init", &policyNever)}},
			podStatus: exited("init", 42), want: true},
		{desc: "sidecar container exited with matching rules", spec: v1.PodSpec{InitContainers: []v1.Container{withRule("init", &policyAlways)}},
			podStatus: exited("init", 42), want: true},
		{desc: "container exited without rules", spec: v1.PodSpec{Containers: []v1.Container{{Name: "regular"}}},
			podStatus: exited("regular", 1), want: false},
		{desc: "exit code not matching", spec: v1.PodSpec{Containers: []v1.Container{withRule("regular", &policyNever)}},
			podStatus: exited("regular", 1), want: false},
		{desc: "API status shows the matching termination", spec: v1.PodSpec{Containers: []v1.Container{withRule("regular", &policyNever)}},
			api: &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "regular",
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 42}}}}}, want: true},
		{desc: "condition False does not mark", spec: v1.PodSpec{Containers: []v1.Container{withRule("regular", &policyNever)}},
			api: &v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}}}, want: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := &v1.Pod{Spec: tc.spec}
			if got := ShouldAllContainersRestart(pod, tc.podStatus, tc.api); got != tc.want {
				t.Errorf("ShouldAllContainersRestart = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestAllContainersRestartCleanedUp(t *testing.T) {
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "init"}}, Containers: []v1.Container{{Name: "app"}}}}
	if !AllContainersRestartCleanedUp(pod, &PodStatus{}) {
		t.Error("no instances: want cleaned up")
	}
	for _, name := range []string{"init", "app"} {
		ps := &PodStatus{ContainerStatuses: []*Status{{Name: name, State: ContainerStateExited}}}
		if AllContainersRestartCleanedUp(pod, ps) {
			t.Errorf("an instance of %s left: want not cleaned up", name)
		}
	}
}

// TestShouldContainerBeRestartedContainerPolicy covers the container-level
// policy path ShouldContainerBeRestarted takes with ContainerRestartRules
// on, the kubelet v1.36 default.
func TestShouldContainerBeRestartedContainerPolicy(t *testing.T) {
	rule := exitRule(v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleOnExitCodesOpIn, 42)
	for _, tc := range []struct {
		desc      string
		podPolicy v1.RestartPolicy
		container v1.Container
		exitCode  int
		want      bool
	}{
		{desc: "Never container in an Always pod stays down", podPolicy: v1.RestartPolicyAlways, container: v1.Container{Name: "c", RestartPolicy: &policyNever}, exitCode: 0},
		{desc: "Always container in a Never pod restarts", podPolicy: v1.RestartPolicyNever, container: v1.Container{Name: "c", RestartPolicy: &policyAlways}, exitCode: 0, want: true},
		{desc: "OnFailure container that succeeded stays down", podPolicy: v1.RestartPolicyAlways, container: v1.Container{Name: "c", RestartPolicy: &policyOnFailure}, exitCode: 0},
		{desc: "matching Restart rule restarts a Never container", podPolicy: v1.RestartPolicyNever,
			container: v1.Container{Name: "c", RestartPolicy: &policyNever, RestartPolicyRules: []v1.ContainerRestartRule{rule}}, exitCode: 42, want: true},
		{desc: "other exit code of a Never container with a rule", podPolicy: v1.RestartPolicyNever,
			container: v1.Container{Name: "c", RestartPolicy: &policyNever, RestartPolicyRules: []v1.ContainerRestartRule{rule}}, exitCode: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tc.podPolicy, Containers: []v1.Container{tc.container}}}
			ps := &PodStatus{ContainerStatuses: []*Status{{Name: "c", State: ContainerStateExited, ExitCode: tc.exitCode}}}
			if got := ShouldContainerBeRestarted(&pod.Spec.Containers[0], pod, ps); got != tc.want {
				t.Errorf("ShouldContainerBeRestarted = %t, want %t", got, tc.want)
			}
		})
	}
}
