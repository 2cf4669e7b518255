package kuberuntime

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

var (
	containerAlways    = v1.ContainerRestartPolicyAlways
	containerOnFailure = v1.ContainerRestartPolicyOnFailure
	containerNever     = v1.ContainerRestartPolicyNever
)

// restartAllOn1 is the kubelet tests' rule: restart the whole pod when the
// container exits with 1.
var restartAllOn1 = []v1.ContainerRestartRule{{
	Action:    v1.ContainerRestartRuleActionRestartAllContainers,
	ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}},
}}

// withContainerPolicy sets container i's own restartPolicy.
func withContainerPolicy(i int, policy *v1.ContainerRestartPolicy) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[i].RestartPolicy = policy }
}

// reset is one expected removal of an in-place restart.
func reset(name string, kill bool) ContainerToRemoveInfo {
	return ContainerToRemoveInfo{ContainerID: cid(name), Container: &v1.Container{Name: name}, Kill: kill}
}

func (a PodActions) withResets(r ...ContainerToRemoveInfo) PodActions {
	a.ContainersToReset = r
	return a
}

// TestComputePodActionsWithContainerRestartRules ports the kubelet's
// TestComputePodActionsWithContainerRestartRules (v1.36.3): a container's
// own restartPolicy overrides the pod's.
func TestComputePodActionsWithContainerRestartRules(t *testing.T) {
	runComputePodActionsCases(t, []computePodActionsCase{
		{
			desc:        "restart exited containers if RestartPolicy == Always",
			mutatePodFn: chain(withContainerPolicy(0, &containerAlways), withContainerPolicy(1, &containerAlways), withPolicy(v1.RestartPolicyNever)),
			mutateStatusFn: func(ps *container.PodStatus) {
				setStatuses(ps, exited("foo1", 0), exited("foo2", 111))
			},
			actions: startContainers(0, 1),
		},
		{
			desc:        "restart failed containers if RestartPolicy == OnFailure",
			mutatePodFn: chain(withContainerPolicy(0, &containerOnFailure), withContainerPolicy(1, &containerOnFailure), withPolicy(v1.RestartPolicyNever)),
			mutateStatusFn: func(ps *container.PodStatus) {
				setStatuses(ps, exited("foo1", 0), exited("foo2", 111))
			},
			actions: startContainers(1),
		},
		{
			desc:        "restart created but not started containers if RestartPolicy == OnFailure",
			mutatePodFn: chain(withContainerPolicy(0, &containerOnFailure), withContainerPolicy(1, &containerOnFailure), withPolicy(v1.RestartPolicyNever)),
			mutateStatusFn: func(ps *container.PodStatus) {
				setStatuses(ps, exited("foo1", 0), created("foo2"))
			},
			actions: startContainers(1),
		},
		{
			desc:        "don't restart containers if RestartPolicy == Never",
			mutatePodFn: chain(withContainerPolicy(0, &containerNever), withContainerPolicy(1, &containerNever), withPolicy(v1.RestartPolicyAlways)),
			mutateStatusFn: func(ps *container.PodStatus) {
				setStatuses(ps, exited("foo1", 0), exited("foo2", 111))
			},
			actions: noAction(),
		},
		{
			desc:        "Kill pod and recreate all containers (except for the succeeded one) if the pod sandbox is dead",
			mutatePodFn: chain(withContainerPolicy(1, &containerOnFailure), withPolicy(v1.RestartPolicyAlways)),
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{notReadySandbox(testSandboxID, 0)}
				setStatuses(ps, exited("foo2", 0))
			},
			actions: recreate(testSandboxID, 1).withStart(0, 2),
		},
		// Not in the kubelet's table, but its code.
		{
			desc:        "a Restart rule restarts a Never container on a matching exit only",
			mutatePodFn: chain(withPolicy(v1.RestartPolicyNever), withContainerPolicy(0, &containerNever), withContainerPolicy(1, &containerNever), withRules(0, restartOn42), withRules(1, restartOn42)),
			mutateStatusFn: func(ps *container.PodStatus) {
				setStatuses(ps, exited("foo1", 42), exited("foo2", 1))
			},
			actions: startContainers(0),
		},
		{
			desc:        "a Never container of an Always pod is killed, not restarted, on a liveness failure",
			mutatePodFn: withContainerPolicy(0, &containerNever),
			probes:      liveness("foo1", ProbeFailure),
			actions:     noAction().withKills(killLiveness("foo1", false)),
		},
		{
			desc:        "an Always container of a Never pod is restarted on a liveness failure",
			mutatePodFn: chain(withPolicy(v1.RestartPolicyNever), withContainerPolicy(0, &containerAlways)),
			probes:      liveness("foo1", ProbeFailure),
			actions:     startContainers(0).withKills(killLiveness("foo1", true)),
		},
		{
			desc:        "all done, the last one Never in an Always pod: the pod is killed",
			mutatePodFn: chain(withContainerPolicy(0, &containerNever), withContainerPolicy(1, &containerNever), withContainerPolicy(2, &containerNever)),
			mutateStatusFn: func(ps *container.PodStatus) {
				exitAll(ps, 0)
			},
			actions: killPod(),
		},
	})
}

// restartOn42 restarts a container that exits with 42.
var restartOn42 = []v1.ContainerRestartRule{{
	Action:    v1.ContainerRestartRuleActionRestart,
	ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}},
}}

func withRules(i int, rules []v1.ContainerRestartRule) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[i].RestartPolicyRules = rules }
}

// TestComputePodActionsInitContainerRestartRules covers the init container
// paths of the kubelet's computeInitContainerActions with
// ContainerRestartRules on (no kubelet table has them): a failed init
// container restarts per its own policy and rules.
func TestComputePodActionsInitContainerRestartRules(t *testing.T) {
	initWith := func(policy *v1.ContainerRestartPolicy, rules []v1.ContainerRestartRule) v1.Container {
		c := initContainer("init1")
		c.RestartPolicy, c.RestartPolicyRules = policy, rules
		return c
	}
	runComputePodActionsCases(t, []computePodActionsCase{
		{
			desc:           "OnFailure init container in a Never pod is restarted after a failure",
			mutatePodFn:    chain(withPolicy(v1.RestartPolicyNever), withInits(initWith(&containerOnFailure, nil))),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, exited("init1", 1)) },
			actions:        startInits(0),
		},
		{
			desc:           "Never init container in an Always pod fails the pod",
			mutatePodFn:    withInits(initWith(&containerNever, nil)),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, exited("init1", 1)) },
			actions:        killPod(),
		},
		{
			desc:           "a matching Restart rule restarts a Never init container",
			mutatePodFn:    chain(withPolicy(v1.RestartPolicyNever), withInits(initWith(&containerNever, restartOn42))),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, exited("init1", 42)) },
			actions:        startInits(0),
		},
		{
			desc:           "unknown Never init container in an Always pod fails the pod (no exit code for rules)",
			mutatePodFn:    withInits(initWith(&containerNever, restartOn42)),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, unknown("init1")) },
			actions:        killPod(),
		},
		{
			desc:           "unknown Always-policy init container in a Never pod is killed and restarted",
			mutatePodFn:    chain(withPolicy(v1.RestartPolicyNever), withInits(initWith(&containerOnFailure, nil))),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, unknown("init1")) },
			actions:        startInits(0).withKills(killInitUnknown("init1")),
		},
	})
}

// TestComputePodActionsForRestartAllContainers ports the kubelet's
// TestComputePodActionsForRestartAllContainers (v1.36.3): a pod marked for
// an in-place restart has every instance of its init and regular
// containers removed, running ones killed first, the instances that
// triggered it last; nothing is started until they are gone.
func TestComputePodActionsForRestartAllContainers(t *testing.T) {
	inits := withInits(initContainer("init1"), initContainer("init2"), initContainer("init3"))
	initsExited := func(ps *container.PodStatus) {
		onlyStatuses(ps, exited("init1", 0), exited("init2", 0), exited("init3", 0))
	}
	sidecars := withInits(sidecar("restartable-init-1"), sidecar("restartable-init-2"), sidecar("restartable-init-3"))
	sidecarsRunning := func(ps *container.PodStatus) {
		onlyStatuses(ps, running("restartable-init-1"), running("restartable-init-2"), running("restartable-init-3"))
	}
	runComputePodActionsCases(t, []computePodActionsCase{
		{desc: "pod not marked for RestartAllContainers", actions: noAction()},
		{
			desc:       "pod marked for RestartAllContainers",
			restartAll: true,
			actions:    noAction().withResets(reset("foo1", true), reset("foo2", true), reset("foo3", true)),
		},
		{
			desc: "pod marked for RestartAllContainers with init containers", restartAll: true,
			mutatePodFn: inits, mutateStatusFn: initsExited,
			actions: noAction().withResets(reset("init1", false), reset("init2", false), reset("init3", false)),
		},
		{
			desc: "pod marked for RestartAllContainers with restartable init containers", restartAll: true,
			mutatePodFn: sidecars, mutateStatusFn: sidecarsRunning,
			actions: noAction().withResets(reset("restartable-init-1", true), reset("restartable-init-2", true), reset("restartable-init-3", true)),
		},
		{
			// init3 exited and triggered it; init2 is a running sidecar.
			desc: "init container exit triggers RestartAllContainers", restartAll: true,
			mutatePodFn: chain(inits, func(p *v1.Pod) {
				p.Spec.InitContainers[1].RestartPolicy = &containerAlways
				p.Spec.InitContainers[2].RestartPolicy, p.Spec.InitContainers[2].RestartPolicyRules = &containerNever, restartAllOn1
			}),
			mutateStatusFn: func(ps *container.PodStatus) {
				onlyStatuses(ps, exited("init1", 0), running("init2"), exited("init3", 1))
			},
			actions: noAction().withResets(reset("init1", false), reset("init2", true), reset("init3", false)),
		},
		{
			desc: "sidecar container exit triggers RestartAllContainres", restartAll: true,
			mutatePodFn: chain(sidecars, func(p *v1.Pod) { p.Spec.InitContainers[2].RestartPolicyRules = restartAllOn1 }),
			mutateStatusFn: func(ps *container.PodStatus) {
				onlyStatuses(ps, running("restartable-init-1"), running("restartable-init-2"), exited("restartable-init-3", 1), running("foo1"))
			},
			actions: noAction().withResets(reset("foo1", true), reset("restartable-init-1", true), reset("restartable-init-2", true), reset("restartable-init-3", false)),
		},
		{
			desc: "regular container exit triggers RestartAllContainers", restartAll: true,
			mutatePodFn: chain(sidecars, func(p *v1.Pod) {
				p.Spec.Containers[2].RestartPolicy, p.Spec.Containers[2].RestartPolicyRules = &containerNever, restartAllOn1
			}),
			mutateStatusFn: func(ps *container.PodStatus) {
				sidecarsRunning(ps)
				setStatuses(ps, running("foo1"), running("foo2"), exited("foo3", 1))
			},
			actions: noAction().withResets(reset("foo1", true), reset("foo2", true),
				reset("restartable-init-1", true), reset("restartable-init-2", true), reset("restartable-init-3", true), reset("foo3", false)),
		},
		{
			// Every instance goes, not just the newest: foo3 triggered it.
			desc: "removes past terminated statuses", restartAll: true,
			mutatePodFn: func(p *v1.Pod) {
				p.Spec.Containers[2].RestartPolicy, p.Spec.Containers[2].RestartPolicyRules = &containerAlways, restartAllOn1
			},
			mutateStatusFn: func(ps *container.PodStatus) {
				setStatuses(ps, exited("foo3", 1))
				ps.ContainerStatuses = append(ps.ContainerStatuses, past("foo1", 99), past("foo2", 99), past("foo3", 99))
			},
			actions: noAction().withResets(reset("foo1", true), pastReset("foo1"), reset("foo2", true), pastReset("foo2"), pastReset("foo3"), reset("foo3", false)),
		},
		{
			desc:           "all containers removed, start init container",
			mutatePodFn:    inits,
			mutateStatusFn: func(ps *container.PodStatus) { ps.ContainerStatuses = nil },
			actions:        startInits(0),
		},
		{
			desc:           "all containers removed, start regular container",
			mutateStatusFn: func(ps *container.PodStatus) { ps.ContainerStatuses = nil },
			actions:        startContainers(0, 1, 2),
		},
	})
}

// past is an older exited instance of a container, with its own ID.
func past(name string, code int) *container.Status {
	s := exited(name, code)
	s.ID = container.BuildContainerID(testRuntime, name+"-past")
	s.CreatedAt = testEpoch.Add(-1)
	return s
}

func pastReset(name string) ContainerToRemoveInfo {
	return ContainerToRemoveInfo{ContainerID: container.BuildContainerID(testRuntime, name+"-past"), Container: &v1.Container{Name: name}}
}
