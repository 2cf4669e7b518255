package kuberuntime

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

type computePodActionsCase struct {
	desc           string
	mutatePodFn    func(*v1.Pod)
	mutateStatusFn func(*container.PodStatus)
	probes         *fakeProbes
	// restartAll is computePodActions' restartAllContainers: the pod's API
	// status carries AllContainersRestarting=True.
	restartAll bool
	actions    PodActions
}

func runComputePodActionsCases(t *testing.T, cases []computePodActionsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			// The status is taken before the pod is mutated, so a changed
			// image leaves the running containers with the old hash.
			status := makeTestPodStatus(pod)
			if tc.mutatePodFn != nil {
				tc.mutatePodFn(pod)
			}
			if tc.mutateStatusFn != nil {
				tc.mutateStatusFn(status)
			}
			got := computePodActions(context.Background(), pod, status, tc.probes, tc.restartAll)
			if d := diffActions(tc.actions, got); d != "" {
				t.Errorf("computePodActions mismatch:\n%s\ngot: %s", d, got)
			}
		})
	}
}

func TestComputePodActionsSandbox(t *testing.T) {
	runComputePodActionsCases(t, []computePodActionsCase{
		{
			desc:    "everything running, nothing to do",
			actions: noAction(),
		},
		{
			desc:           "no sandbox yet: create one at attempt 0 and start every container",
			mutateStatusFn: func(ps *container.PodStatus) { ps.SandboxStatuses = nil; ps.ContainerStatuses = nil },
			actions:        recreate("", 0).withStart(0, 1, 2),
		},
		{
			desc: "sandbox died: recreate at the next attempt, keep the old ID for cleanup",
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{notReadySandbox(testSandboxID, 0)}
				exitAll(ps, 137)
			},
			actions: recreate(testSandboxID, 1).withStart(0, 1, 2),
		},
		{
			desc: "attempt is bumped past the highest attempt of any sandbox",
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{notReadySandbox(testSandboxID, 2), notReadySandbox("old", 5)}
				exitAll(ps, 0)
			},
			actions: recreate(testSandboxID, 6).withStart(0, 1, 2),
		},
		{
			desc: "two ready sandboxes: reconcile by creating a new one",
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses = append(ps.SandboxStatuses, readySandbox("older", 3))
			},
			actions: recreate(testSandboxID, 4).withStart(0, 1, 2),
		},
		{
			desc:        "network mode changed to host: recreate without reusing the old sandbox ID",
			mutatePodFn: func(p *v1.Pod) { p.Spec.HostNetwork = true },
			actions:     recreate("", 1).withStart(0, 1, 2),
		},
		{
			desc:        "host-network pod in a node-namespace sandbox without IP is fine",
			mutatePodFn: func(p *v1.Pod) { p.Spec.HostNetwork = true },
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses[0].Linux.Namespaces.Options.Network = runtimeapi.NamespaceMode_NODE
				ps.SandboxStatuses[0].Network.Ip = ""
			},
			actions: noAction(),
		},
		{
			desc:           "pod-network sandbox lost its IP: recreate",
			mutateStatusFn: func(ps *container.PodStatus) { ps.SandboxStatuses[0].Network.Ip = "" },
			actions:        recreate(testSandboxID, 1).withStart(0, 1, 2),
		},
		{
			desc:           "sandbox without network status is not judged on its IP",
			mutateStatusFn: func(ps *container.PodStatus) { ps.SandboxStatuses[0].Network = nil },
			actions:        noAction(),
		},
		{
			desc:        "sandbox died under Never after containers ran: kill, no new sandbox",
			mutatePodFn: withPolicy(v1.RestartPolicyNever),
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{notReadySandbox(testSandboxID, 0)}
				exitAll(ps, 0)
			},
			actions: recreate(testSandboxID, 1).noCreate(),
		},
		{
			desc:        "sandbox died under Never before any container was created: retry the sandbox",
			mutatePodFn: withPolicy(v1.RestartPolicyNever),
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{notReadySandbox(testSandboxID, 0)}
				ps.ContainerStatuses = nil
			},
			actions: recreate(testSandboxID, 1).withStart(0, 1, 2),
		},
		{
			desc:        "no sandbox at all under Never (first attempt): create it even if old containers are listed",
			mutatePodFn: withPolicy(v1.RestartPolicyNever),
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses = nil
				exitAll(ps, 0)
			},
			actions: recreate("", 0).withStart(0, 1, 2),
		},
		{
			desc:        "sandbox died under OnFailure: only containers that did not succeed are started",
			mutatePodFn: withPolicy(v1.RestartPolicyOnFailure),
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{notReadySandbox(testSandboxID, 0)}
				onlyStatuses(ps, exited("foo1", 0), exited("foo2", 1), exited("foo3", 0))
			},
			actions: recreate(testSandboxID, 1).withStart(1),
		},
		{
			desc:        "sandbox died under OnFailure with every container succeeded: kill, no new sandbox",
			mutatePodFn: withPolicy(v1.RestartPolicyOnFailure),
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{notReadySandbox(testSandboxID, 0)}
				exitAll(ps, 0)
			},
			actions: recreate(testSandboxID, 1).noCreate(),
		},
		{
			desc:        "new sandbox for a pod with init containers starts over at the first init container",
			mutatePodFn: withInits(initContainer("init1"), initContainer("init2")),
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{notReadySandbox(testSandboxID, 0)}
				onlyStatuses(ps, exited("init1", 0), exited("init2", 0), exited("foo1", 137), exited("foo2", 137), exited("foo3", 137))
			},
			actions: recreate(testSandboxID, 1).withInitStart(0),
		},
		{
			desc:        "new sandbox under OnFailure with init containers and every regular container succeeded: no new sandbox",
			mutatePodFn: chain(withPolicy(v1.RestartPolicyOnFailure), withInits(initContainer("init1"))),
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{notReadySandbox(testSandboxID, 0)}
				onlyStatuses(ps, exited("init1", 0), exited("foo1", 0), exited("foo2", 0), exited("foo3", 0))
			},
			actions: recreate(testSandboxID, 1).noCreate(),
		},
		{
			desc:        "new sandbox under OnFailure with init containers and no regular container ever created: initialize",
			mutatePodFn: chain(withPolicy(v1.RestartPolicyOnFailure), withInits(initContainer("init1"))),
			mutateStatusFn: func(ps *container.PodStatus) {
				ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{notReadySandbox(testSandboxID, 0)}
				onlyStatuses(ps, exited("init1", 1))
			},
			actions: recreate(testSandboxID, 1).withInitStart(0),
		},
		{
			desc: "ephemeral containers wait for a new sandbox",
			mutatePodFn: func(p *v1.Pod) {
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: testImage}}}
			},
			mutateStatusFn: func(ps *container.PodStatus) { ps.SandboxStatuses = nil; ps.ContainerStatuses = nil },
			actions:        recreate("", 0).withStart(0, 1, 2),
		},
	})
}

func TestComputePodActionsRestartPolicy(t *testing.T) {
	runComputePodActionsCases(t, []computePodActionsCase{
		{
			desc:           "Always: a container that succeeded is restarted",
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("foo1", 0)) },
			actions:        startContainers(0),
		},
		{
			desc:           "Always: a container that failed is restarted",
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("foo1", 1)) },
			actions:        startContainers(0),
		},
		{
			desc:           "OnFailure: a container that succeeded stays down",
			mutatePodFn:    withPolicy(v1.RestartPolicyOnFailure),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("foo1", 0)) },
			actions:        noAction(),
		},
		{
			desc:           "OnFailure: a container that failed is restarted",
			mutatePodFn:    withPolicy(v1.RestartPolicyOnFailure),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("foo2", 2)) },
			actions:        startContainers(1),
		},
		{
			desc:           "Never: a container that succeeded stays down",
			mutatePodFn:    withPolicy(v1.RestartPolicyNever),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("foo1", 0)) },
			actions:        noAction(),
		},
		{
			desc:           "Never: a container that failed stays down",
			mutatePodFn:    withPolicy(v1.RestartPolicyNever),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("foo3", 1)) },
			actions:        noAction(),
		},
		{
			desc:           "Always: a container never created is started",
			mutateStatusFn: func(ps *container.PodStatus) { removeStatuses(ps, "foo2") },
			actions:        startContainers(1),
		},
		{
			desc:           "Never: a container never created is still started once",
			mutatePodFn:    withPolicy(v1.RestartPolicyNever),
			mutateStatusFn: func(ps *container.PodStatus) { removeStatuses(ps, "foo3") },
			actions:        startContainers(2),
		},
		{
			desc:           "Never: a container stuck in created (start failed) is started again",
			mutatePodFn:    withPolicy(v1.RestartPolicyNever),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, created("foo1")) },
			actions:        startContainers(0),
		},
		{
			desc:           "Always: every container exited, all restarted and the pod kept",
			mutateStatusFn: func(ps *container.PodStatus) { exitAll(ps, 1) },
			actions:        startContainers(0, 1, 2),
		},
		{
			desc:           "Never: every container exited, the pod is done and killed",
			mutatePodFn:    withPolicy(v1.RestartPolicyNever),
			mutateStatusFn: func(ps *container.PodStatus) { exitAll(ps, 1) },
			actions:        killPod(),
		},
		{
			desc:           "OnFailure: every container succeeded, the pod is done and killed",
			mutatePodFn:    withPolicy(v1.RestartPolicyOnFailure),
			mutateStatusFn: func(ps *container.PodStatus) { exitAll(ps, 0) },
			actions:        killPod(),
		},
		{
			desc:        "OnFailure: all exited, only the failed one restarted",
			mutatePodFn: withPolicy(v1.RestartPolicyOnFailure),
			mutateStatusFn: func(ps *container.PodStatus) {
				onlyStatuses(ps, exited("foo1", 0), exited("foo2", 3), exited("foo3", 0))
			},
			actions: startContainers(1),
		},
		{
			desc:        "OnFailure: the latest instance decides, not an older failed one",
			mutatePodFn: withPolicy(v1.RestartPolicyOnFailure),
			mutateStatusFn: func(ps *container.PodStatus) {
				setStatuses(ps, exited("foo1", 0))
				ps.ContainerStatuses = append(ps.ContainerStatuses, exited("foo1", 1))
			},
			actions: noAction(),
		},
		{
			desc: "pod being deleted: exited containers are not restarted",
			mutatePodFn: func(p *v1.Pod) {
				now := metav1.NewTime(testEpoch)
				p.DeletionTimestamp = &now
			},
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("foo1", 1)) },
			actions:        noAction(),
		},
		{
			desc: "pod being deleted with every container exited: killed",
			mutatePodFn: func(p *v1.Pod) {
				now := metav1.NewTime(testEpoch)
				p.DeletionTimestamp = &now
			},
			mutateStatusFn: func(ps *container.PodStatus) { exitAll(ps, 0) },
			actions:        killPod(),
		},
	})
}

func TestComputePodActionsUnknownAndHash(t *testing.T) {
	newImage := func(i int) func(*v1.Pod) {
		return func(p *v1.Pod) { p.Spec.Containers[i].Image = "busybox:1.37" }
	}
	runComputePodActionsCases(t, []computePodActionsCase{
		{
			desc:           "Always: an unknown container is killed before it is restarted",
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, unknown("foo2")) },
			actions:        startContainers(1).withKills(killUnknown("foo2")),
		},
		{
			desc:           "Never: an unknown container is still killed and restarted",
			mutatePodFn:    withPolicy(v1.RestartPolicyNever),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, unknown("foo2")) },
			actions:        startContainers(1).withKills(killUnknown("foo2")),
		},
		{
			desc:           "OnFailure: every container unknown, all killed and restarted",
			mutatePodFn:    withPolicy(v1.RestartPolicyOnFailure),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, unknown("foo1"), unknown("foo2"), unknown("foo3")) },
			actions:        startContainers(0, 1, 2).withKills(killUnknown("foo1"), killUnknown("foo2"), killUnknown("foo3")),
		},
		{
			desc: "pod being deleted: an unknown container is left to the pod kill",
			mutatePodFn: func(p *v1.Pod) {
				now := metav1.NewTime(testEpoch)
				p.DeletionTimestamp = &now
			},
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, unknown("foo2")) },
			actions:        noAction(),
		},
		{
			desc:        "Always: a running container whose image changed is replaced",
			mutatePodFn: newImage(0),
			actions:     startContainers(0).withKills(killChanged("foo1", true)),
		},
		{
			desc:        "Never: a running container whose image changed is replaced anyway",
			mutatePodFn: chain(withPolicy(v1.RestartPolicyNever), newImage(1)),
			actions:     startContainers(1).withKills(killChanged("foo2", true)),
		},
		{
			desc:        "OnFailure: a running container whose image changed is replaced",
			mutatePodFn: chain(withPolicy(v1.RestartPolicyOnFailure), newImage(2)),
			actions:     startContainers(2).withKills(killChanged("foo3", true)),
		},
		{
			desc:        "every running container changed: all replaced, the pod kept",
			mutatePodFn: chain(newImage(0), newImage(1), newImage(2)),
			actions:     startContainers(0, 1, 2).withKills(killChanged("foo1", true), killChanged("foo2", true), killChanged("foo3", true)),
		},
		{
			desc:           "Never: an exited container whose image changed stays down",
			mutatePodFn:    chain(withPolicy(v1.RestartPolicyNever), newImage(0)),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("foo1", 0)) },
			actions:        noAction(),
		},
		{
			desc:           "Always: an exited container whose image changed is just started",
			mutatePodFn:    newImage(0),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("foo1", 0)) },
			actions:        startContainers(0),
		},
		{
			desc: "a changed command is not part of the hash and restarts nothing",
			mutatePodFn: func(p *v1.Pod) {
				p.Spec.Containers[0].Command = []string{"sleep", "inf"}
				p.Spec.Containers[1].Env = []v1.EnvVar{{Name: "A", Value: "b"}}
			},
			actions: noAction(),
		},
		{
			desc:        "a changed spec wins over a failed liveness probe in the kill reason",
			mutatePodFn: newImage(0),
			probes:      liveness("foo1", ProbeFailure),
			actions:     startContainers(0).withKills(killChanged("foo1", true)),
		},
	})
}

func TestComputePodActionsProbes(t *testing.T) {
	onlyFoo1 := func(p *v1.Pod) { p.Spec.Containers = p.Spec.Containers[:1] }
	runComputePodActionsCases(t, []computePodActionsCase{
		{
			desc:    "Always: liveness failure kills and restarts",
			probes:  liveness("foo1", ProbeFailure),
			actions: startContainers(0).withKills(killLiveness("foo1", true)),
		},
		{
			desc:        "OnFailure: liveness failure kills and restarts",
			mutatePodFn: withPolicy(v1.RestartPolicyOnFailure),
			probes:      liveness("foo2", ProbeFailure),
			actions:     startContainers(1).withKills(killLiveness("foo2", true)),
		},
		{
			desc:        "Never: liveness failure kills without restart, the others keep the pod",
			mutatePodFn: withPolicy(v1.RestartPolicyNever),
			probes:      liveness("foo3", ProbeFailure),
			actions:     noAction().withKills(killLiveness("foo3", false)),
		},
		{
			desc:           "Never: liveness failure of the last running container kills the pod",
			mutatePodFn:    chain(withPolicy(v1.RestartPolicyNever), onlyFoo1),
			mutateStatusFn: func(ps *container.PodStatus) { removeStatuses(ps, "foo2", "foo3") },
			probes:         liveness("foo1", ProbeFailure),
			actions:        killPod().withKills(killLiveness("foo1", false)),
		},
		{
			desc:    "Always: startup probe failure kills and restarts",
			probes:  startup("foo2", ProbeFailure),
			actions: startContainers(1).withKills(killStartup("foo2", true)),
		},
		{
			desc:        "Never: startup probe failure kills without restart",
			mutatePodFn: withPolicy(v1.RestartPolicyNever),
			probes:      startup("foo1", ProbeFailure),
			actions:     noAction().withKills(killStartup("foo1", false)),
		},
		{
			desc:    "liveness success and startup pending keep the container",
			probes:  &fakeProbes{liveness: map[container.ContainerID]ProbeResult{cid("foo1"): ProbeSuccess}, startup: map[container.ContainerID]ProbeResult{cid("foo1"): ProbeUnknown}},
			actions: noAction(),
		},
		{
			desc:    "a failure recorded for another instance ID does not touch the running one",
			probes:  &fakeProbes{liveness: map[container.ContainerID]ProbeResult{container.BuildContainerID(testRuntime, "old-foo1"): ProbeFailure}},
			actions: noAction(),
		},
		{
			desc:           "a probe failure of an exited container changes nothing beyond the restart policy",
			mutatePodFn:    withPolicy(v1.RestartPolicyNever),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("foo1", 1)) },
			probes:         liveness("foo1", ProbeFailure),
			actions:        noAction(),
		},
	})
}

func TestComputePodActionsEphemeral(t *testing.T) {
	debug := func(names ...string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			for _, n := range names {
				p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers,
					v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: n, Image: testImage}})
			}
		}
	}
	runComputePodActionsCases(t, []computePodActionsCase{
		{
			desc:        "a new ephemeral container is started",
			mutatePodFn: debug("debug"),
			actions:     noAction().withEphemeral(0),
		},
		{
			desc:           "only ephemeral containers never seen are started",
			mutatePodFn:    debug("debug1", "debug2"),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, running("debug1")) },
			actions:        noAction().withEphemeral(1),
		},
		{
			desc:           "an exited ephemeral container is never restarted, even under Always",
			mutatePodFn:    debug("debug"),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("debug", 1)) },
			actions:        noAction(),
		},
		{
			desc:        "an ephemeral container starts while initialization is still running",
			mutatePodFn: chain(debug("debug"), withInits(initContainer("init1"))),
			mutateStatusFn: func(ps *container.PodStatus) {
				onlyStatuses(ps, running("init1"))
			},
			actions: noAction().withEphemeral(0),
		},
		{
			desc:           "an ephemeral container starts in a pod whose containers are all done, which is killed",
			mutatePodFn:    chain(debug("debug"), withPolicy(v1.RestartPolicyNever)),
			mutateStatusFn: func(ps *container.PodStatus) { exitAll(ps, 0) },
			actions:        killPod().withEphemeral(0),
		},
	})
}

func TestComputePodActionsInitContainers(t *testing.T) {
	threeInits := withInits(initContainer("init1"), initContainer("init2"), initContainer("init3"))
	runComputePodActionsCases(t, []computePodActionsCase{
		{
			desc:           "fresh sandbox: the first init container starts alone",
			mutatePodFn:    threeInits,
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps) },
			actions:        startInits(0),
		},
		{
			desc:           "an init container is running: wait",
			mutatePodFn:    threeInits,
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, running("init1")) },
			actions:        noAction(),
		},
		{
			desc:           "the first init container succeeded: start the second",
			mutatePodFn:    threeInits,
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, exited("init1", 0)) },
			actions:        startInits(1),
		},
		{
			desc:           "the second succeeded after the first was garbage-collected: start the third",
			mutatePodFn:    threeInits,
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, exited("init2", 0)) },
			actions:        startInits(2),
		},
		{
			desc:        "the last init container succeeded: start every regular container",
			mutatePodFn: threeInits,
			mutateStatusFn: func(ps *container.PodStatus) {
				onlyStatuses(ps, exited("init1", 0), exited("init2", 0), exited("init3", 0))
			},
			actions: startContainers(0, 1, 2),
		},
		{
			desc:           "Always: a failed init container is restarted",
			mutatePodFn:    threeInits,
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, exited("init1", 0), exited("init2", 1)) },
			actions:        startInits(1),
		},
		{
			desc:           "OnFailure: a failed init container is restarted",
			mutatePodFn:    chain(threeInits, withPolicy(v1.RestartPolicyOnFailure)),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, exited("init1", 0), exited("init2", 1)) },
			actions:        startInits(1),
		},
		{
			desc:           "Never: a failed init container makes the pod terminal",
			mutatePodFn:    chain(threeInits, withPolicy(v1.RestartPolicyNever)),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, exited("init1", 0), exited("init2", 1)) },
			actions:        killPod(),
		},
		{
			desc:           "Never: an OOM-killed init container fails the pod even with exit code 0",
			mutatePodFn:    chain(threeInits, withPolicy(v1.RestartPolicyNever)),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, oomKilled("init1", 0)) },
			actions:        killPod(),
		},
		{
			desc:           "Always: an OOM-killed init container is restarted, not skipped",
			mutatePodFn:    threeInits,
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, oomKilled("init1", 0)) },
			actions:        startInits(0),
		},
		{
			desc:           "Always: an unknown init container is killed and restarted",
			mutatePodFn:    threeInits,
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, exited("init1", 0), unknown("init2")) },
			actions:        startInits(1).withKills(killInitUnknown("init2")),
		},
		{
			desc:           "Never: an unknown init container makes the pod terminal",
			mutatePodFn:    chain(threeInits, withPolicy(v1.RestartPolicyNever)),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, unknown("init1")) },
			actions:        killPod(),
		},
		{
			desc:           "an init container stuck in created is started again",
			mutatePodFn:    chain(threeInits, withPolicy(v1.RestartPolicyNever)),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, created("init1")) },
			actions:        startInits(0),
		},
		{
			desc:           "regular containers running and init records gone: initialization is not repeated",
			mutatePodFn:    threeInits,
			mutateStatusFn: func(ps *container.PodStatus) {},
			actions:        noAction(),
		},
		{
			desc:           "a failed init record does not matter once regular containers run",
			mutatePodFn:    chain(threeInits, withPolicy(v1.RestartPolicyNever)),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("init2", 1)) },
			actions:        noAction(),
		},
		{
			desc:        "regular containers only exited (reboot) and init records gone: initialize again",
			mutatePodFn: threeInits,
			mutateStatusFn: func(ps *container.PodStatus) {
				exitAll(ps, 255)
			},
			actions: startInits(0),
		},
		{
			desc:           "a regular container created but not started counts as initialized",
			mutatePodFn:    threeInits,
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, created("foo1")) },
			actions:        startContainers(0, 1, 2),
		},
	})
}

func TestComputePodActionsSidecars(t *testing.T) {
	// sidecar1 (restartable), init2 (ordinary): the pod's init order.
	sidecarThenInit := withInits(sidecar("sidecar1"), initContainer("init2"))
	runComputePodActionsCases(t, []computePodActionsCase{
		{
			desc:           "fresh sandbox: the sidecar starts first",
			mutatePodFn:    sidecarThenInit,
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps) },
			actions:        startInits(0),
		},
		{
			desc:           "the sidecar runs without startup probe: the next init container starts beside it",
			mutatePodFn:    sidecarThenInit,
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, running("sidecar1")) },
			actions:        startInits(1),
		},
		{
			desc:           "the sidecar's startup probe has no result yet: wait",
			mutatePodFn:    withInits(withStartupProbe(sidecar("sidecar1")), initContainer("init2")),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, running("sidecar1")) },
			actions:        noAction(),
		},
		{
			desc:           "the sidecar's startup probe succeeded: the next init container starts",
			mutatePodFn:    withInits(withStartupProbe(sidecar("sidecar1")), initContainer("init2")),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, running("sidecar1")) },
			probes:         startup("sidecar1", ProbeSuccess),
			actions:        startInits(1),
		},
		{
			desc:           "the sidecar's startup probe failed: kill and restart it, the next waits",
			mutatePodFn:    withInits(withStartupProbe(sidecar("sidecar1")), initContainer("init2")),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, running("sidecar1")) },
			probes:         startup("sidecar1", ProbeFailure),
			actions:        startInits(0).withKills(killInitStartup("sidecar1")),
		},
		{
			desc:           "the sidecar's startup probe failed under Never: still restarted",
			mutatePodFn:    chain(withPolicy(v1.RestartPolicyNever), withInits(withStartupProbe(sidecar("sidecar1")), initContainer("init2"))),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, running("sidecar1")) },
			probes:         startup("sidecar1", ProbeFailure),
			actions:        startInits(0).withKills(killInitStartup("sidecar1")),
		},
		{
			desc:           "sidecar running and ordinary init done: regular containers start",
			mutatePodFn:    sidecarThenInit,
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, running("sidecar1"), exited("init2", 0)) },
			actions:        startContainers(0, 1, 2),
		},
		{
			desc:           "a sidecar that is the last init container: regular containers start once it runs",
			mutatePodFn:    withInits(initContainer("init1"), sidecar("sidecar2")),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, exited("init1", 0), running("sidecar2")) },
			actions:        startContainers(0, 1, 2),
		},
		{
			desc:           "a sidecar exits before initialization finished: restarted",
			mutatePodFn:    withInits(sidecar("sidecar1"), sidecar("sidecar2"), initContainer("init3")),
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, running("sidecar1"), exited("sidecar2", 1)) },
			actions:        startInits(1),
		},
		{
			desc:           "initialized pod with sidecar and regular containers running: nothing to do",
			mutatePodFn:    sidecarThenInit,
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, running("sidecar1"), exited("init2", 0)) },
			actions:        noAction(),
		},
		{
			desc:           "Never: an exited sidecar is restarted, regular containers kept",
			mutatePodFn:    chain(withPolicy(v1.RestartPolicyNever), sidecarThenInit),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("sidecar1", 0), exited("init2", 0)) },
			actions:        startInits(0),
		},
		{
			desc:           "OnFailure: a sidecar that exited 0 is restarted",
			mutatePodFn:    chain(withPolicy(v1.RestartPolicyOnFailure), sidecarThenInit),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, exited("sidecar1", 0)) },
			actions:        startInits(0),
		},
		{
			desc:           "a sidecar whose record is gone is started again after initialization",
			mutatePodFn:    sidecarThenInit,
			mutateStatusFn: func(ps *container.PodStatus) {},
			actions:        startInits(0),
		},
		{
			desc: "a sidecar whose image changed is replaced",
			mutatePodFn: func(p *v1.Pod) {
				sidecarThenInit(p)
				p.Spec.InitContainers[0].Image = "envoy:2"
			},
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, running("sidecar1")) },
			actions:        startInits(0).withKills(killInitChanged("sidecar1")),
		},
		{
			desc:           "a sidecar failing liveness is killed and restarted",
			mutatePodFn:    withInits(withLivenessProbe(sidecar("sidecar1")), initContainer("init2")),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, running("sidecar1")) },
			probes:         liveness("sidecar1", ProbeFailure),
			actions:        startInits(0).withKills(killInitLiveness("sidecar1")),
		},
		{
			desc:           "a sidecar failing liveness without a liveness probe in its spec is kept",
			mutatePodFn:    sidecarThenInit,
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, running("sidecar1")) },
			probes:         liveness("sidecar1", ProbeFailure),
			actions:        noAction(),
		},
		{
			desc:           "Never: an unknown sidecar is killed and restarted",
			mutatePodFn:    chain(withPolicy(v1.RestartPolicyNever), sidecarThenInit),
			mutateStatusFn: func(ps *container.PodStatus) { setStatuses(ps, unknown("sidecar1")) },
			actions:        startInits(0).withKills(killInitUnknown("sidecar1")),
		},
		{
			desc:        "Never: regular containers all done, a running sidecar does not keep the pod",
			mutatePodFn: chain(withPolicy(v1.RestartPolicyNever), sidecarThenInit),
			mutateStatusFn: func(ps *container.PodStatus) {
				exitAll(ps, 0)
				setStatuses(ps, running("sidecar1"), exited("init2", 0))
			},
			actions: killPod(),
		},
		{
			desc:        "Never: regular containers all done and the sidecar exited: not restarted, pod killed",
			mutatePodFn: chain(withPolicy(v1.RestartPolicyNever), sidecarThenInit),
			mutateStatusFn: func(ps *container.PodStatus) {
				exitAll(ps, 0)
				setStatuses(ps, exited("sidecar1", 1), exited("init2", 0))
			},
			actions: killPod(),
		},
		{
			desc: "a sidecar started for the first time with a changed image: replaced, and the next init container starts",
			mutatePodFn: func(p *v1.Pod) {
				sidecarThenInit(p)
				p.Spec.InitContainers[0].Image = "envoy:2"
			},
			mutateStatusFn: func(ps *container.PodStatus) { onlyStatuses(ps, running("sidecar1")) },
			actions:        startInits(0, 1).withKills(killInitChanged("sidecar1")),
		},
		{
			desc:        "a sidecar whose startup probe failed after initialization: restarted, regular containers kept",
			mutatePodFn: withInits(withStartupProbe(sidecar("sidecar1")), initContainer("init2")),
			mutateStatusFn: func(ps *container.PodStatus) {
				setStatuses(ps, running("sidecar1"), exited("init2", 0))
			},
			probes:  startup("sidecar1", ProbeFailure),
			actions: startInits(0).withKills(killInitStartup("sidecar1")),
		},
		{
			desc:        "two sidecars to restart are started in spec order",
			mutatePodFn: withInits(sidecar("sidecar1"), sidecar("sidecar2")),
			mutateStatusFn: func(ps *container.PodStatus) {
				setStatuses(ps, exited("sidecar1", 1), exited("sidecar2", 2))
			},
			actions: startInits(0, 1),
		},
	})
}

// noCreate turns a recreate expectation into "kill, but build nothing".
func (a PodActions) noCreate() PodActions {
	a.CreateSandbox = false
	return a
}

func TestComputePodActionsNilInputs(t *testing.T) {
	pod := makeTestPod()
	got := ComputePodActions(context.Background(), pod, nil, nil, false)
	if d := diffActions(recreate("", 0).withStart(0, 1, 2), got); d != "" {
		t.Errorf("nil status and probes: %s", d)
	}
}
