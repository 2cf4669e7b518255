package kuberuntime

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

func TestPodSandboxChanged(t *testing.T) {
	hostNetwork := func(p *v1.Pod) { p.Spec.HostNetwork = true }
	nodeNS := func(s *runtimeapi.PodSandboxStatus) *runtimeapi.PodSandboxStatus {
		s.Linux.Namespaces.Options.Network = runtimeapi.NamespaceMode_NODE
		return s
	}
	noIP := func(s *runtimeapi.PodSandboxStatus) *runtimeapi.PodSandboxStatus {
		s.Network.Ip = ""
		return s
	}
	for _, tc := range []struct {
		desc        string
		mutatePodFn func(*v1.Pod)
		sandboxes   []*runtimeapi.PodSandboxStatus
		changed     bool
		attempt     uint32
		sandboxID   string
	}{
		{desc: "no sandbox", changed: true, attempt: 0, sandboxID: ""},
		{desc: "one ready sandbox", sandboxes: []*runtimeapi.PodSandboxStatus{readySandbox("a", 0)}, attempt: 0, sandboxID: "a"},
		{desc: "ready sandbox keeps its attempt", sandboxes: []*runtimeapi.PodSandboxStatus{readySandbox("a", 3)}, attempt: 3, sandboxID: "a"},
		{desc: "ready newest with dead older ones reports the highest attempt", sandboxes: []*runtimeapi.PodSandboxStatus{readySandbox("b", 1), notReadySandbox("a", 7)}, attempt: 7, sandboxID: "b"},
		{desc: "newest not ready", sandboxes: []*runtimeapi.PodSandboxStatus{notReadySandbox("b", 1), notReadySandbox("a", 0)}, changed: true, attempt: 2, sandboxID: "b"},
		{desc: "newest not ready though an older one is ready", sandboxes: []*runtimeapi.PodSandboxStatus{notReadySandbox("b", 1), readySandbox("a", 0)}, changed: true, attempt: 2, sandboxID: "b"},
		{desc: "two ready", sandboxes: []*runtimeapi.PodSandboxStatus{readySandbox("b", 1), readySandbox("a", 0)}, changed: true, attempt: 2, sandboxID: "b"},
		{desc: "pod became host-network", mutatePodFn: hostNetwork, sandboxes: []*runtimeapi.PodSandboxStatus{readySandbox("a", 0)}, changed: true, attempt: 1, sandboxID: ""},
		{desc: "pod left host-network", sandboxes: []*runtimeapi.PodSandboxStatus{nodeNS(readySandbox("a", 0))}, changed: true, attempt: 1, sandboxID: ""},
		{desc: "host-network pod in a node sandbox", mutatePodFn: hostNetwork, sandboxes: []*runtimeapi.PodSandboxStatus{nodeNS(noIP(readySandbox("a", 0)))}, attempt: 0, sandboxID: "a"},
		{desc: "pod-network sandbox without IP", sandboxes: []*runtimeapi.PodSandboxStatus{noIP(readySandbox("a", 2))}, changed: true, attempt: 3, sandboxID: "a"},
		{desc: "sandbox without metadata counts as attempt 0", sandboxes: []*runtimeapi.PodSandboxStatus{{Id: "a", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}}, changed: true, attempt: 1, sandboxID: "a"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			if tc.mutatePodFn != nil {
				tc.mutatePodFn(pod)
			}
			ps := &container.PodStatus{ID: pod.UID, SandboxStatuses: tc.sandboxes}
			changed, attempt, id := podSandboxChanged(context.Background(), pod, ps)
			if changed != tc.changed || attempt != tc.attempt || id != tc.sandboxID {
				t.Errorf("podSandboxChanged = (%t, %d, %q), want (%t, %d, %q)", changed, attempt, id, tc.changed, tc.attempt, tc.sandboxID)
			}
		})
	}
}

func TestIsInitContainerFailed(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		status *container.Status
		failed bool
	}{
		{desc: "exited 0", status: exited("i", 0), failed: false},
		{desc: "exited 1", status: exited("i", 1), failed: true},
		{desc: "exited 0 but OOMKilled", status: oomKilled("i", 0), failed: true},
		{desc: "unknown", status: unknown("i"), failed: true},
		{desc: "running", status: running("i"), failed: false},
		{desc: "created", status: created("i"), failed: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := isInitContainerFailed(tc.status); got != tc.failed {
				t.Errorf("isInitContainerFailed = %t, want %t", got, tc.failed)
			}
		})
	}
}

func TestPodActionsString(t *testing.T) {
	a := startContainers(0, 2).withKills(killUnknown("foo2"), killChanged("foo1", true)).withResets(reset("foo3", true), pastReset("foo3"))
	want := `KillPod: false, CreateSandbox: false, UpdatePodResources: false, SandboxID: "sandbox-0", Attempt: 0, InitContainersToStart: [], ContainersToStart: [0 2], EphemeralContainersToStart: [], ContainersToUpdate: [], ContainersToKill: [foo1(foo1-id): Container foo1 definition changed, will be restarted; foo2(foo2-id): Container is in "unknown" state, try killing it before restart], ContainersToReset: [foo3(foo3-id) kill=true; foo3(foo3-past) kill=false]`
	for i := range 5 {
		// Map order varies between runs; the rendering must not.
		if got := a.String(); got != want {
			t.Fatalf("String() try %d =\n%s\nwant\n%s", i, got, want)
		}
	}
}

func TestProbeResultString(t *testing.T) {
	for _, tc := range []struct {
		desc string
		r    ProbeResult
		want string
	}{
		{desc: "unknown", r: ProbeUnknown, want: "Unknown"},
		{desc: "success", r: ProbeSuccess, want: "Success"},
		{desc: "failure", r: ProbeFailure, want: "Failure"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := tc.r.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
