package container

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// The kubelet v1.36 has the ContainerRestartRules (beta since 1.35) and
// RestartAllContainersOnContainerExits (beta since 1.36) feature gates on by
// default, so a container may carry its own restartPolicy and
// restartPolicyRules. The helpers below are the kubelet's podutil
// (pkg/api/v1/pod/util.go) and kubecontainer (pkg/kubelet/container/
// helpers.go) functions for them, with both gates on: neither
// k8s.io/component-helpers nor k8s.io/api has them, and sync does not import
// k8s.io/kubernetes.

// FindMatchingContainerRestartRule returns the first of the container's
// restart rules whose exit-code condition matches exitCode. Matches the
// kubelet's podutil.FindMatchingContainerRestartRule: a rule without
// exitCodes, or with an unknown operator, never matches.
func FindMatchingContainerRestartRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		in := slices.Contains(rule.ExitCodes.Values, exitCode)
		switch rule.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return rule, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return rule, true
			}
		}
	}
	return v1.ContainerRestartRule{}, false
}

// ContainerShouldRestart reports whether a container that exited with
// exitCode is to run again. Matches the kubelet's
// podutil.ContainerShouldRestart: with a container-level restartPolicy, a
// matching rule (Restart or RestartAllContainers) restarts it, else that
// policy decides; without one, the pod's policy decides (an empty pod
// policy counts as Always). Rules are only read when the container has its
// own policy, which validation requires of a container with rules.
func ContainerShouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if rule, ok := FindMatchingContainerRestartRule(c, exitCode); ok {
			switch rule.Action {
			case v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers:
				return true
			}
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	case v1.RestartPolicyNever:
		return false
	default:
		return true
	}
}

// IsContainerRestartable reports whether the container may ever run again
// after it exits, whatever the exit code. Matches the kubelet's
// podutil.IsContainerRestartable.
func IsContainerRestartable(spec *v1.PodSpec, c *v1.Container) bool {
	if c.RestartPolicy != nil {
		for _, rule := range c.RestartPolicyRules {
			if rule.Action == v1.ContainerRestartRuleActionRestart {
				return true
			}
		}
		return *c.RestartPolicy != v1.ContainerRestartPolicyNever
	}
	return spec.RestartPolicy != v1.RestartPolicyNever
}

// AllContainersCouldRestart reports whether any init or regular container
// has a RestartAllContainers rule, that is whether the pod may be restarted
// in place. Matches the kubelet's podutil.AllContainersCouldRestart.
func AllContainersCouldRestart(spec *v1.PodSpec) bool {
	if spec == nil {
		return false
	}
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			if hasRestartAllRule(&list[i]) {
				return true
			}
		}
	}
	return false
}

func hasRestartAllRule(c *v1.Container) bool {
	for _, rule := range c.RestartPolicyRules {
		if rule.Action == v1.ContainerRestartRuleActionRestartAllContainers {
			return true
		}
	}
	return false
}

// TriggersRestartAll reports whether a container that exited with exitCode
// asks for all of the pod's containers to restart: its first matching rule
// is a RestartAllContainers rule.
func TriggersRestartAll(c *v1.Container, exitCode int32) bool {
	rule, ok := FindMatchingContainerRestartRule(c, exitCode)
	return ok && rule.Action == v1.ContainerRestartRuleActionRestartAllContainers
}

// ShouldAllContainersRestart reports whether the pod is to be restarted in
// place: apiPodStatus (the previous API status) carries
// AllContainersRestarting=True, or an init or regular container exited
// (in the runtime's view, podStatus, or in apiPodStatus) with an exit code
// matching one of its RestartAllContainers rules. Either status may be nil.
// Matches the kubelet's kubecontainer.ShouldAllContainersRestart.
func ShouldAllContainersRestart(pod *v1.Pod, podStatus *PodStatus, apiPodStatus *v1.PodStatus) bool {
	if apiPodStatus != nil {
		for _, c := range apiPodStatus.Conditions {
			if c.Type == v1.AllContainersRestarting && c.Status == v1.ConditionTrue {
				return true
			}
		}
	}
	apiStatuses := map[string]*v1.ContainerStatus{}
	if apiPodStatus != nil {
		for _, list := range [][]v1.ContainerStatus{apiPodStatus.InitContainerStatuses, apiPodStatus.ContainerStatuses} {
			for i := range list {
				apiStatuses[list[i].Name] = &list[i]
			}
		}
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			if podStatus != nil {
				if s := podStatus.FindContainerStatusByName(c.Name); s != nil && s.State == ContainerStateExited &&
					TriggersRestartAll(c, int32(s.ExitCode)) {
					return true
				}
			}
			if s, ok := apiStatuses[c.Name]; ok && s.State.Terminated != nil && TriggersRestartAll(c, s.State.Terminated.ExitCode) {
				return true
			}
		}
	}
	return false
}

// AllContainersRestartCleanedUp reports whether the runtime holds no
// instance of any init or regular container of the pod any more: the
// in-place restart's removal step is done. Matches the kubelet's
// kubecontainer.AllContainersRestartCleanedUp.
func AllContainersRestartCleanedUp(pod *v1.Pod, podStatus *PodStatus) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if podStatus.FindContainerStatusByName(list[i].Name) != nil {
				return false
			}
		}
	}
	return true
}
