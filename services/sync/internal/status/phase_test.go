package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestGetPhase(t *testing.T) {
	const (
		always    = v1.RestartPolicyAlways
		onFailure = v1.RestartPolicyOnFailure
		never     = v1.RestartPolicyNever
	)
	static := func(p *v1.Pod) *v1.Pod {
		p.Annotations = map[string]string{configSourceAnnotationKey: "file"}
		return p
	}
	for _, tc := range []struct {
		desc        string
		pod         *v1.Pod
		statuses    []v1.ContainerStatus
		terminal    bool
		initialized bool
		want        v1.PodPhase
	}{
		// Regular containers, by restart policy.
		{desc: "all running, Always", pod: newPod(always, "a", "b"),
			statuses: []v1.ContainerStatus{csRunning("a"), csRunning("b")}, want: v1.PodRunning},
		{desc: "one waiting first start", pod: newPod(always, "a", "b"),
			statuses: []v1.ContainerStatus{csRunning("a"), csWaiting("b")}, want: v1.PodPending},
		{desc: "no statuses at all", pod: newPod(always, "a"), want: v1.PodPending},
		{desc: "one status missing (unknown)", pod: newPod(always, "a", "b"),
			statuses: []v1.ContainerStatus{csRunning("a")}, want: v1.PodPending},
		{desc: "all exited 0, Always restarts", pod: newPod(always, "a"),
			statuses: []v1.ContainerStatus{csExited("a", 0)}, want: v1.PodRunning},
		{desc: "all exited 0, OnFailure", pod: newPod(onFailure, "a", "b"),
			statuses: []v1.ContainerStatus{csExited("a", 0), csExited("b", 0)}, want: v1.PodSucceeded},
		{desc: "all exited 0, Never", pod: newPod(never, "a"),
			statuses: []v1.ContainerStatus{csExited("a", 0)}, want: v1.PodSucceeded},
		{desc: "one failed, Never", pod: newPod(never, "a", "b"),
			statuses: []v1.ContainerStatus{csExited("a", 0), csExited("b", 2)}, want: v1.PodFailed},
		{desc: "one failed, OnFailure restarts", pod: newPod(onFailure, "a", "b"),
			statuses: []v1.ContainerStatus{csExited("a", 0), csExited("b", 2)}, want: v1.PodRunning},
		{desc: "one failed, Always", pod: newPod(always, "a"),
			statuses: []v1.ContainerStatus{csExited("a", 1)}, want: v1.PodRunning},
		{desc: "crash looping counts as stopped", pod: newPod(always, "a"),
			statuses: []v1.ContainerStatus{csRestarting("a", 1)}, want: v1.PodRunning},
		{desc: "crash looping beside a running one", pod: newPod(always, "a", "b"),
			statuses: []v1.ContainerStatus{csRunning("a"), csRestarting("b", 1)}, want: v1.PodRunning},
		{desc: "one running one exited, Never", pod: newPod(never, "a", "b"),
			statuses: []v1.ContainerStatus{csRunning("a"), csExited("b", 1)}, want: v1.PodRunning},

		// Terminal pods: nothing restarts any more.
		{desc: "terminal, Always, all exited 0", pod: newPod(always, "a"), terminal: true,
			statuses: []v1.ContainerStatus{csExited("a", 0)}, want: v1.PodSucceeded},
		{desc: "terminal, Always, one exited 137", pod: newPod(always, "a", "b"), terminal: true,
			statuses: []v1.ContainerStatus{csExited("a", 0), csExited("b", 137)}, want: v1.PodFailed},
		{desc: "terminal static pod keeps Running", pod: static(newPod(always, "a")), terminal: true,
			statuses: []v1.ContainerStatus{csExited("a", 0)}, want: v1.PodRunning},
		{desc: "API pod source is not static", pod: func() *v1.Pod {
			p := newPod(always, "a")
			p.Annotations = map[string]string{configSourceAnnotationKey: "api"}
			return p
		}(), terminal: true, statuses: []v1.ContainerStatus{csExited("a", 0)}, want: v1.PodSucceeded},

		// Ordinary init containers.
		{desc: "init not started", pod: withInit(newPod(always, "a"), "i1"),
			statuses: []v1.ContainerStatus{csWaiting("i1"), csWaiting("a")}, want: v1.PodPending},
		{desc: "init running", pod: withInit(newPod(never, "a"), "i1"),
			statuses: []v1.ContainerStatus{csRunning("i1"), csWaiting("a")}, want: v1.PodPending},
		{desc: "second init pending after first completed", pod: withInit(newPod(never, "a"), "i1", "i2"),
			statuses: []v1.ContainerStatus{csExited("i1", 0), csWaiting("i2"), csWaiting("a")}, want: v1.PodPending},
		{desc: "init failed, Never", pod: withInit(newPod(never, "a"), "i1"),
			statuses: []v1.ContainerStatus{csExited("i1", 1), csWaiting("a")}, want: v1.PodFailed},
		{desc: "init failed, OnFailure retries", pod: withInit(newPod(onFailure, "a"), "i1"),
			statuses: []v1.ContainerStatus{csExited("i1", 1), csWaiting("a")}, want: v1.PodPending},
		{desc: "init failed, Always retries", pod: withInit(newPod(always, "a"), "i1"),
			statuses: []v1.ContainerStatus{csRestarting("i1", 1), csWaiting("a")}, want: v1.PodPending},
		{desc: "init crash looping, Never fails", pod: withInit(newPod(never, "a"), "i1"),
			statuses: []v1.ContainerStatus{csRestarting("i1", 1), csWaiting("a")}, want: v1.PodFailed},
		{desc: "init done, regular running", pod: withInit(newPod(never, "a"), "i1"),
			statuses: []v1.ContainerStatus{csExited("i1", 0), csRunning("a")}, want: v1.PodRunning},
		{desc: "init missing status", pod: withInit(newPod(never, "a"), "i1"),
			statuses: []v1.ContainerStatus{csWaiting("a")}, want: v1.PodPending},

		// Sidecars.
		{desc: "sidecar running not started yet", pod: withSidecar(newPod(always, "a"), "s"),
			statuses: []v1.ContainerStatus{csRunningNotStarted("s"), csWaiting("a")}, want: v1.PodPending},
		{desc: "sidecar started, regular creating", pod: withSidecar(newPod(always, "a"), "s"),
			statuses: []v1.ContainerStatus{csRunning("s"), csWaiting("a")}, want: v1.PodPending},
		{desc: "sidecar and regular running", pod: withSidecar(newPod(always, "a"), "s"),
			statuses: []v1.ContainerStatus{csRunning("s"), csRunning("a")}, want: v1.PodRunning},
		{desc: "sidecar still running, regular completed, Never: Running until the sidecar stops", pod: withSidecar(newPod(never, "a"), "s"),
			statuses: []v1.ContainerStatus{csRunning("s"), csExited("a", 0)}, want: v1.PodRunning},
		{desc: "sidecar killed 137, regular completed, OnFailure: Succeeded", pod: withSidecar(newPod(onFailure, "a"), "s"),
			statuses: []v1.ContainerStatus{csExited("s", 137), csExited("a", 0)}, want: v1.PodSucceeded},
		{desc: "sidecar killed, regular completed, terminal: Succeeded", pod: withSidecar(newPod(always, "a"), "s"),
			terminal: true, statuses: []v1.ContainerStatus{csExited("s", 143), csExited("a", 0)}, want: v1.PodSucceeded},
		{desc: "sidecar restarting after init: stays Running", pod: withSidecar(newPod(always, "a"), "s"), initialized: true,
			statuses: []v1.ContainerStatus{csRunningNotStarted("s"), csRunning("a")}, want: v1.PodRunning},
		{desc: "sidecar restarting before init: Pending", pod: withSidecar(newPod(always, "a"), "s"),
			statuses: []v1.ContainerStatus{csRunningNotStarted("s"), csRunning("a")}, want: v1.PodPending},
		{desc: "sidecar status missing", pod: withSidecar(newPod(always, "a"), "s"),
			statuses: []v1.ContainerStatus{csRunning("a")}, want: v1.PodPending},
		{desc: "sidecar crash looping beside running regular", pod: withSidecar(newPod(always, "a"), "s"),
			statuses: []v1.ContainerStatus{csRestarting("s", 1), csRunning("a")}, want: v1.PodRunning},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := getPhase(tc.pod, tc.statuses, tc.terminal, tc.initialized); got != tc.want {
				t.Errorf("getPhase = %s, want %s", got, tc.want)
			}
		})
	}
}
