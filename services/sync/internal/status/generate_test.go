package status

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

func TestGenerateConditions(t *testing.T) {
	type want struct {
		status  v1.ConditionStatus
		reason  string
		message string
	}
	withProbe := func(p *v1.Pod) *v1.Pod {
		p.Spec.Containers[1].ReadinessProbe = &v1.Probe{}
		return p
	}
	for _, tc := range []struct {
		desc      string
		pod       *v1.Pod
		rt        *container.PodStatus
		readiness probeMap
		in        Inputs
		cond      v1.PodConditionType
		want      want
	}{
		{desc: "ready: all running without probes", pod: newPod(v1.RestartPolicyAlways, "a", "b"),
			rt: rt(running("a", "a1", 0, 0), running("b", "b1", 0, 0)), cond: v1.PodReady,
			want: want{status: v1.ConditionTrue}},
		{desc: "containers ready: all running", pod: newPod(v1.RestartPolicyAlways, "a", "b"),
			rt: rt(running("a", "a1", 0, 0), running("b", "b1", 0, 0)), cond: v1.ContainersReady,
			want: want{status: v1.ConditionTrue}},
		{desc: "ready: unready names listed", pod: newPod(v1.RestartPolicyAlways, "a", "b"),
			rt: rt(), cond: v1.PodReady,
			want: want{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [a b]"}},
		{desc: "containers ready: same message", pod: newPod(v1.RestartPolicyAlways, "a", "b"),
			rt: rt(), cond: v1.ContainersReady,
			want: want{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [a b]"}},
		{desc: "readiness probe without result", pod: withProbe(newPod(v1.RestartPolicyAlways, "a", "b")),
			rt: rt(running("a", "a1", 0, 0), running("b", "b1", 0, 0)), cond: v1.PodReady,
			want: want{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [b]"}},
		{desc: "readiness probe failed", pod: withProbe(newPod(v1.RestartPolicyAlways, "a", "b")),
			rt: rt(running("a", "a1", 0, 0), running("b", "b1", 0, 0)), readiness: probeMap{"containerd://b1": false},
			cond: v1.PodReady, want: want{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [b]"}},
		{desc: "readiness probe succeeded", pod: withProbe(newPod(v1.RestartPolicyAlways, "a", "b")),
			rt: rt(running("a", "a1", 0, 0), running("b", "b1", 0, 0)), readiness: probeMap{"containerd://b1": true},
			cond: v1.PodReady, want: want{status: v1.ConditionTrue}},
		{desc: "ready: completed pod", pod: newPod(v1.RestartPolicyNever, "a"),
			rt: rt(exited("a", "a1", 0, 0, 0)), cond: v1.PodReady,
			want: want{v1.ConditionFalse, PodCompleted, ""}},
		{desc: "containers ready: failed pod", pod: newPod(v1.RestartPolicyNever, "a"),
			rt: rt(exited("a", "a1", 0, 1, 0)), cond: v1.ContainersReady,
			want: want{v1.ConditionFalse, PodFailed, ""}},
		{desc: "ready: readiness gate missing", pod: func() *v1.Pod {
			p := newPod(v1.RestartPolicyAlways, "a")
			p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
			return p
		}(), rt: rt(running("a", "a1", 0, 0)), cond: v1.PodReady,
			want: want{v1.ConditionFalse, ReadinessGatesNotReady, `corresponding condition of pod readiness gate "example.com/lb" does not exist.`}},
		{desc: "ready: readiness gate True (kept from the API)", pod: func() *v1.Pod {
			p := newPod(v1.RestartPolicyAlways, "a")
			p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
			p.Status.Conditions = []v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}}
			return p
		}(), rt: rt(running("a", "a1", 0, 0)), cond: v1.PodReady, want: want{status: v1.ConditionTrue}},
		{desc: "initialized: no init containers", pod: newPod(v1.RestartPolicyAlways, "a"),
			rt: rt(), cond: v1.PodInitialized, want: want{status: v1.ConditionTrue}},
		{desc: "initialized: init running", pod: withInit(newPod(v1.RestartPolicyAlways, "a"), "i1", "i2"),
			rt: rt(running("i1", "i11", 0, 0)), cond: v1.PodInitialized,
			want: want{v1.ConditionFalse, ContainersNotInitialized, "containers with incomplete status: [i1 i2]"}},
		{desc: "initialized: first done, second pending", pod: withInit(newPod(v1.RestartPolicyAlways, "a"), "i1", "i2"),
			rt: rt(exited("i1", "i11", 0, 0, 0)), cond: v1.PodInitialized,
			want: want{v1.ConditionFalse, ContainersNotInitialized, "containers with incomplete status: [i2]"}},
		{desc: "initialized: all done", pod: withInit(newPod(v1.RestartPolicyAlways, "a"), "i1"),
			rt: rt(exited("i1", "i11", 0, 0, 0), running("a", "a1", time.Minute, 0)), cond: v1.PodInitialized,
			want: want{status: v1.ConditionTrue}},
		{desc: "initialized: sidecar started", pod: withSidecar(newPod(v1.RestartPolicyAlways, "a"), "s"),
			rt: rt(running("s", "s1", 0, 0)), cond: v1.PodInitialized, want: want{status: v1.ConditionTrue}},
		{desc: "initialized: sidecar startup probe pending", pod: func() *v1.Pod {
			p := withSidecar(newPod(v1.RestartPolicyAlways, "a"), "s")
			p.Spec.InitContainers[0].StartupProbe = &v1.Probe{}
			return p
		}(), rt: rt(running("s", "s1", 0, 0)), cond: v1.PodInitialized,
			want: want{v1.ConditionFalse, ContainersNotInitialized, "containers with incomplete status: [s]"}},
		{desc: "initialized: completed pod", pod: withInit(newPod(v1.RestartPolicyNever, "a"), "i1"),
			rt: rt(exited("i1", "i11", 0, 0, 0), exited("a", "a1", time.Minute, 0, 0)), cond: v1.PodInitialized,
			want: want{v1.ConditionTrue, PodCompleted, ""}},
		{desc: "containers ready: sidecar unready counts", pod: func() *v1.Pod {
			p := withSidecar(newPod(v1.RestartPolicyAlways, "a"), "s")
			p.Spec.InitContainers[0].ReadinessProbe = &v1.Probe{}
			return p
		}(), rt: rt(running("s", "s1", 0, 0), running("a", "a1", time.Minute, 0)), cond: v1.ContainersReady,
			want: want{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [s]"}},
		{desc: "ready to start containers: ready sandbox", pod: newPod(v1.RestartPolicyAlways, "a"),
			rt: rt(), cond: v1.PodReadyToStartContainers, want: want{status: v1.ConditionTrue}},
		{desc: "ready to start containers: no sandbox", pod: newPod(v1.RestartPolicyAlways, "a"),
			rt: &container.PodStatus{}, cond: v1.PodReadyToStartContainers, want: want{status: v1.ConditionFalse}},
		{desc: "ready to start containers: sandbox not ready", pod: newPod(v1.RestartPolicyAlways, "a"),
			rt: func() *container.PodStatus {
				ps := rt()
				ps.SandboxStatuses[0].State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
				return ps
			}(), cond: v1.PodReadyToStartContainers, want: want{status: v1.ConditionFalse}},
		{desc: "ready to start containers: caller's sandbox check wins", pod: newPod(v1.RestartPolicyAlways, "a"),
			rt: rt(), in: Inputs{PodSandboxChanged: func(*v1.Pod, *container.PodStatus) bool { return true }},
			cond: v1.PodReadyToStartContainers, want: want{status: v1.ConditionFalse}},
		{desc: "scheduled", pod: newPod(v1.RestartPolicyAlways, "a"), rt: rt(), cond: v1.PodScheduled,
			want: want{status: v1.ConditionTrue}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			in := tc.in
			in.Clock = &fixedClock{now: t0}
			if tc.readiness != nil {
				in.Probes = tc.readiness
			}
			s := GenerateAPIPodStatus(tc.pod, tc.rt, in)
			c := condition(s, tc.cond)
			if c == nil {
				t.Fatalf("no %s condition in %+v", tc.cond, s.Conditions)
			}
			if c.Status != tc.want.status || c.Reason != tc.want.reason || c.Message != tc.want.message {
				t.Errorf("%s = (%s, %q, %q), want (%s, %q, %q)", tc.cond, c.Status, c.Reason, c.Message,
					tc.want.status, tc.want.reason, tc.want.message)
			}
			seen := map[v1.PodConditionType]int{}
			for _, c := range s.Conditions {
				seen[c.Type]++
				if seen[c.Type] > 1 {
					t.Errorf("condition %s appears twice", c.Type)
				}
			}
		})
	}
}

func TestLastTransitionTime(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "a")
	pod.Spec.Containers[0].ReadinessProbe = &v1.Probe{}
	clock := &fixedClock{now: t0.Add(10*time.Second + 400*time.Millisecond)}
	ps := rt(running("a", "a1", 0, 0))
	ready := probeMap{}

	first := GenerateAPIPodStatus(pod, ps, Inputs{Clock: clock, Probes: ready})
	wantFirst := metav1.NewTime(t0.Add(10 * time.Second)) // truncated to the second
	for _, c := range first.Conditions {
		if !c.LastTransitionTime.Equal(&wantFirst) {
			t.Errorf("first %s transition = %v, want %v", c.Type, c.LastTransitionTime, wantFirst)
		}
	}
	if first.StartTime == nil || !first.StartTime.Equal(&wantFirst) {
		t.Errorf("startTime = %v, want %v", first.StartTime, wantFirst)
	}

	// Nothing changes: every transition time and the start time are kept.
	clock.now = t0.Add(time.Minute)
	second := GenerateAPIPodStatus(pod, ps, Inputs{Clock: clock, Probes: ready, OldStatus: &first})
	for _, c := range second.Conditions {
		if !c.LastTransitionTime.Equal(&wantFirst) {
			t.Errorf("unchanged %s transition moved to %v", c.Type, c.LastTransitionTime)
		}
	}
	if NeedsUpdate(&first, &second) {
		t.Error("NeedsUpdate = true for an unchanged status")
	}

	// The readiness probe passes: Ready and ContainersReady move, the
	// others keep their time; startTime stays.
	clock.now = t0.Add(2 * time.Minute)
	ready["containerd://a1"] = true
	third := GenerateAPIPodStatus(pod, ps, Inputs{Clock: clock, Probes: ready, OldStatus: &second})
	wantThird := metav1.NewTime(t0.Add(2 * time.Minute))
	for _, c := range third.Conditions {
		want := wantFirst
		if c.Type == v1.PodReady || c.Type == v1.ContainersReady {
			want = wantThird
			if c.Status != v1.ConditionTrue {
				t.Errorf("%s = %s after the probe passed", c.Type, c.Status)
			}
		}
		if !c.LastTransitionTime.Equal(&want) {
			t.Errorf("%s transition = %v, want %v", c.Type, c.LastTransitionTime, want)
		}
	}
	if !third.StartTime.Equal(&wantFirst) {
		t.Errorf("startTime moved to %v", third.StartTime)
	}
	if !NeedsUpdate(&second, &third) {
		t.Error("NeedsUpdate = false after readiness changed")
	}
}

func TestContainerStatuses(t *testing.T) {
	running1 := metav1.NewTime(t0.Add(2*time.Minute + time.Second))
	for _, tc := range []struct {
		desc    string
		pod     *v1.Pod
		rt      *container.PodStatus
		reasons fakeReasons
		old     *v1.PodStatus
		check   func(t *testing.T, s v1.PodStatus)
	}{
		{
			desc: "first start: ContainerCreating",
			pod:  newPod(v1.RestartPolicyAlways, "a"),
			rt:   rt(),
			check: func(t *testing.T, s v1.PodStatus) {
				a := findStatus(s.ContainerStatuses, "a")
				if a.State.Waiting == nil || a.State.Waiting.Reason != ContainerCreating || a.Image != "img-a" {
					t.Errorf("a = %+v", a)
				}
				if s.Phase != v1.PodPending {
					t.Errorf("phase = %s", s.Phase)
				}
			},
		},
		{
			desc: "with init containers: PodInitializing",
			pod:  withInit(newPod(v1.RestartPolicyAlways, "a"), "i1"),
			rt:   rt(running("i1", "i11", 0, 0)),
			check: func(t *testing.T, s v1.PodStatus) {
				a := findStatus(s.ContainerStatuses, "a")
				if a.State.Waiting == nil || a.State.Waiting.Reason != PodInitializing {
					t.Errorf("a = %+v", a.State)
				}
				i1 := findStatus(s.InitContainerStatuses, "i1")
				if i1.State.Running == nil || i1.Ready {
					t.Errorf("i1 = %+v ready=%t", i1.State, i1.Ready)
				}
			},
		},
		{
			desc: "restarted: state, last termination, restart count, IDs",
			pod:  newPod(v1.RestartPolicyAlways, "a"),
			rt: rt(exited("a", "a0", 0, 3, 0), running("a", "a2", 2*time.Minute, 2),
				exited("a", "a1", time.Minute, 1, 1)),
			check: func(t *testing.T, s v1.PodStatus) {
				a := findStatus(s.ContainerStatuses, "a")
				if a.ContainerID != "containerd://a2" || a.ImageID != "sha256:a" || a.RestartCount != 2 {
					t.Errorf("a = id %q imageID %q restarts %d", a.ContainerID, a.ImageID, a.RestartCount)
				}
				if a.State.Running == nil || !a.State.Running.StartedAt.Equal(&running1) {
					t.Errorf("state = %+v", a.State)
				}
				last := a.LastTerminationState.Terminated
				if last == nil || last.ExitCode != 1 || last.ContainerID != "containerd://a1" || last.Reason != "Error" {
					t.Errorf("last termination = %+v, want the a1 instance (exit 1)", last)
				}
				if !a.Ready || a.Started == nil || !*a.Started {
					t.Errorf("ready=%t started=%v", a.Ready, a.Started)
				}
			},
		},
		{
			desc:    "crash loop: waiting reason over the termination",
			pod:     newPod(v1.RestartPolicyAlways, "a"),
			rt:      rt(exited("a", "a1", 0, 1, 3)),
			reasons: fakeReasons{"a": {"CrashLoopBackOff", "back-off 40s restarting failed container=a pod=web_default(uid-1)"}},
			check: func(t *testing.T, s v1.PodStatus) {
				a := findStatus(s.ContainerStatuses, "a")
				w := a.State.Waiting
				if w == nil || w.Reason != "CrashLoopBackOff" || w.Message != "back-off 40s restarting failed container=a pod=web_default(uid-1)" {
					t.Fatalf("state = %+v", a.State)
				}
				if a.LastTerminationState.Terminated == nil || a.LastTerminationState.Terminated.ExitCode != 1 {
					t.Errorf("last termination = %+v", a.LastTerminationState)
				}
				if a.RestartCount != 3 {
					t.Errorf("restarts = %d", a.RestartCount)
				}
				if s.Phase != v1.PodRunning {
					t.Errorf("phase = %s, want Running (restarting)", s.Phase)
				}
			},
		},
		{
			desc:    "image pull failure before any instance",
			pod:     newPod(v1.RestartPolicyAlways, "a", "b"),
			rt:      rt(running("b", "b1", 0, 0)),
			reasons: fakeReasons{"a": {"ErrImagePull", "not found"}},
			check: func(t *testing.T, s v1.PodStatus) {
				a := findStatus(s.ContainerStatuses, "a")
				if a.State.Waiting == nil || a.State.Waiting.Reason != "ErrImagePull" || a.State.Waiting.Message != "not found" {
					t.Errorf("a = %+v", a.State)
				}
				if s.Phase != v1.PodPending {
					t.Errorf("phase = %s", s.Phase)
				}
			},
		},
		{
			desc:    "reason ignored for a container that will not restart",
			pod:     newPod(v1.RestartPolicyNever, "a"),
			rt:      rt(exited("a", "a1", 0, 1, 0)),
			reasons: fakeReasons{"a": {"CrashLoopBackOff", "stale"}},
			check: func(t *testing.T, s v1.PodStatus) {
				a := findStatus(s.ContainerStatuses, "a")
				if a.State.Terminated == nil || a.State.Terminated.ExitCode != 1 {
					t.Errorf("a = %+v, want terminated", a.State)
				}
				if s.Phase != v1.PodFailed {
					t.Errorf("phase = %s", s.Phase)
				}
			},
		},
		{
			desc:    "create config error",
			pod:     newPod(v1.RestartPolicyAlways, "a"),
			rt:      rt(),
			reasons: fakeReasons{"a": {"CreateContainerConfigError", `secret "s" not found`}},
			check: func(t *testing.T, s v1.PodStatus) {
				if w := findStatus(s.ContainerStatuses, "a").State.Waiting; w == nil || w.Reason != "CreateContainerConfigError" {
					t.Errorf("waiting = %+v", w)
				}
			},
		},
		{
			desc: "unknown instance that was running: ContainerStatusUnknown",
			pod:  newPod(v1.RestartPolicyAlways, "a"),
			rt:   rt(withState(running("a", "a1", 0, 0), container.ContainerStateUnknown)),
			old: &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", RestartCount: 4, ContainerID: "containerd://a1",
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}},
			check: func(t *testing.T, s v1.PodStatus) {
				a := findStatus(s.ContainerStatuses, "a")
				term := a.State.Terminated
				if term == nil || term.Reason != ContainerStatusUnknown || term.ExitCode != 137 ||
					term.Message != "The container could not be located when the pod was terminated" {
					t.Errorf("state = %+v", a.State)
				}
				if a.RestartCount != 5 {
					t.Errorf("restarts = %d, want 5", a.RestartCount)
				}
			},
		},
		{
			desc: "unknown instance never seen running: waiting",
			pod:  newPod(v1.RestartPolicyAlways, "a"),
			rt:   rt(withState(running("a", "a1", 0, 0), container.ContainerStateUnknown)),
			check: func(t *testing.T, s v1.PodStatus) {
				if a := findStatus(s.ContainerStatuses, "a"); a.State.Waiting == nil {
					t.Errorf("state = %+v, want waiting", a.State)
				}
			},
		},
		{
			desc: "running container vanished: last termination unknown, restart counted",
			pod:  newPod(v1.RestartPolicyAlways, "a"),
			rt:   rt(),
			old: &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", RestartCount: 1,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}},
			check: func(t *testing.T, s v1.PodStatus) {
				a := findStatus(s.ContainerStatuses, "a")
				last := a.LastTerminationState.Terminated
				if last == nil || last.Reason != ContainerStatusUnknown || last.ExitCode != 137 {
					t.Errorf("last termination = %+v", a.LastTerminationState)
				}
				if a.RestartCount != 2 {
					t.Errorf("restarts = %d, want 2", a.RestartCount)
				}
				if s.Phase != v1.PodRunning {
					t.Errorf("phase = %s, want Running (not back to Pending)", s.Phase)
				}
			},
		},
		{
			desc: "vanished while the pod is deleted: no restart counted",
			pod: func() *v1.Pod {
				p := newPod(v1.RestartPolicyAlways, "a")
				now := metav1.NewTime(t0)
				p.DeletionTimestamp = &now
				return p
			}(),
			rt: rt(),
			old: &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", RestartCount: 1,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}},
			check: func(t *testing.T, s v1.PodStatus) {
				if a := findStatus(s.ContainerStatuses, "a"); a.RestartCount != 1 || a.LastTerminationState.Terminated == nil {
					t.Errorf("a = restarts %d, last %+v", a.RestartCount, a.LastTerminationState)
				}
			},
		},
		{
			desc: "terminated status kept when the instance was garbage-collected",
			pod:  newPod(v1.RestartPolicyNever, "a"),
			rt:   rt(),
			old: &v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{{Name: "a", ContainerID: "containerd://a1",
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}},
			check: func(t *testing.T, s v1.PodStatus) {
				a := findStatus(s.ContainerStatuses, "a")
				if a.State.Terminated == nil || a.ContainerID != "containerd://a1" {
					t.Errorf("a = %+v", a)
				}
				if s.Phase != v1.PodSucceeded {
					t.Errorf("phase = %s", s.Phase)
				}
			},
		},
		{
			desc: "init container garbage-collected after regular containers ran: Completed",
			pod:  withInit(newPod(v1.RestartPolicyAlways, "a"), "i1"),
			rt:   rt(running("a", "a1", time.Minute, 0)),
			check: func(t *testing.T, s v1.PodStatus) {
				i1 := findStatus(s.InitContainerStatuses, "i1")
				if i1.State.Terminated == nil || i1.State.Terminated.Reason != "Completed" || !i1.Ready {
					t.Errorf("i1 = %+v ready=%t", i1.State, i1.Ready)
				}
				if c := condition(s, v1.PodInitialized); c.Status != v1.ConditionTrue {
					t.Errorf("Initialized = %s", c.Status)
				}
			},
		},
		{
			desc: "init statuses in spec order, regular by name",
			pod:  withInit(newPod(v1.RestartPolicyAlways, "zeta", "alpha"), "second", "first"),
			rt:   rt(),
			check: func(t *testing.T, s v1.PodStatus) {
				if s.InitContainerStatuses[0].Name != "second" || s.InitContainerStatuses[1].Name != "first" {
					t.Errorf("init order = %s, %s", s.InitContainerStatuses[0].Name, s.InitContainerStatuses[1].Name)
				}
				if s.ContainerStatuses[0].Name != "alpha" || s.ContainerStatuses[1].Name != "zeta" {
					t.Errorf("regular order = %s, %s", s.ContainerStatuses[0].Name, s.ContainerStatuses[1].Name)
				}
			},
		},
		{
			desc: "startup probe pending: not started, not ready",
			pod: func() *v1.Pod {
				p := newPod(v1.RestartPolicyAlways, "a")
				p.Spec.Containers[0].StartupProbe = &v1.Probe{}
				return p
			}(),
			rt: rt(running("a", "a1", 0, 0)),
			check: func(t *testing.T, s v1.PodStatus) {
				a := findStatus(s.ContainerStatuses, "a")
				if a.Started == nil || *a.Started || a.Ready {
					t.Errorf("started=%v ready=%t", a.Started, a.Ready)
				}
			},
		},
		{
			desc: "ephemeral container",
			pod: func() *v1.Pod {
				p := newPod(v1.RestartPolicyAlways, "a")
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "img-debug"}}}
				return p
			}(),
			rt: rt(running("a", "a1", 0, 0), running("debug", "d1", time.Minute, 0)),
			check: func(t *testing.T, s v1.PodStatus) {
				if len(s.EphemeralContainerStatuses) != 1 {
					t.Fatalf("ephemeral statuses = %+v", s.EphemeralContainerStatuses)
				}
				d := s.EphemeralContainerStatuses[0]
				if d.Name != "debug" || d.State.Running == nil || d.ContainerID != "containerd://d1" {
					t.Errorf("debug = %+v", d)
				}
				if findStatus(s.ContainerStatuses, "debug") != nil {
					t.Error("ephemeral container listed among regular containers")
				}
			},
		},
		{
			desc: "resources and read-only mounts reported",
			pod: func() *v1.Pod {
				p := newPod(v1.RestartPolicyAlways, "a")
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}
				p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg", ReadOnly: true}}
				return p
			}(),
			rt: rt(running("a", "a1", 0, 0)),
			check: func(t *testing.T, s v1.PodStatus) {
				a := findStatus(s.ContainerStatuses, "a")
				if q := a.AllocatedResources[v1.ResourceCPU]; q.MilliValue() != 250 {
					t.Errorf("allocated cpu = %s", q.String())
				}
				if len(a.VolumeMounts) != 1 || a.VolumeMounts[0].RecursiveReadOnly == nil ||
					*a.VolumeMounts[0].RecursiveReadOnly != v1.RecursiveReadOnlyDisabled {
					t.Errorf("mounts = %+v", a.VolumeMounts)
				}
				if s.QOSClass != v1.PodQOSBurstable {
					t.Errorf("qos = %s", s.QOSClass)
				}
			},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			in := Inputs{Clock: &fixedClock{now: t0}, OldStatus: tc.old}
			if tc.reasons != nil {
				in.Reasons = tc.reasons
			}
			tc.check(t, GenerateAPIPodStatus(tc.pod, tc.rt, in))
		})
	}
}

func TestPhaseTransitions(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		pod     *v1.Pod
		rt      *container.PodStatus
		in      Inputs
		want    v1.PodPhase
		wantWhy string
	}{
		{desc: "previous terminal phase sticks", pod: newPod(v1.RestartPolicyAlways, "a"),
			rt:   rt(running("a", "a2", time.Minute, 1)),
			in:   Inputs{OldStatus: &v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"}},
			want: v1.PodFailed, wantWhy: "Evicted"},
		{desc: "API terminal phase sticks", pod: func() *v1.Pod {
			p := newPod(v1.RestartPolicyAlways, "a")
			p.Status.Phase = v1.PodSucceeded
			return p
		}(), rt: rt(running("a", "a1", 0, 0)), want: v1.PodSucceeded},
		{desc: "eviction forces Failed", pod: newPod(v1.RestartPolicyAlways, "a"), rt: rt(running("a", "a1", 0, 0)),
			in:   Inputs{Eviction: &Eviction{Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}},
			want: v1.PodFailed, wantWhy: "DeadlineExceeded"},
		{desc: "reason kept while phase unchanged", pod: newPod(v1.RestartPolicyAlways, "a"), rt: rt(running("a", "a1", 0, 0)),
			in:   Inputs{OldStatus: &v1.PodStatus{Phase: v1.PodRunning, Reason: "Custom"}},
			want: v1.PodRunning, wantWhy: "Custom"},
		{desc: "reason dropped when phase changes", pod: newPod(v1.RestartPolicyAlways, "a"), rt: rt(running("a", "a1", 0, 0)),
			in:   Inputs{OldStatus: &v1.PodStatus{Phase: v1.PodPending, Reason: "Custom"}},
			want: v1.PodRunning},
		{desc: "terminal pod with sidecar stopped: Succeeded", pod: withSidecar(newPod(v1.RestartPolicyAlways, "a"), "s"),
			rt: rt(exited("s", "s1", 0, 137, 0), exited("a", "a1", time.Minute, 0, 0)), in: Inputs{PodIsTerminal: true},
			want: v1.PodSucceeded},
		{desc: "sidecar restarting after initialization does not send the pod back to Pending",
			pod: func() *v1.Pod {
				p := withSidecar(newPod(v1.RestartPolicyAlways, "a"), "s")
				p.Spec.InitContainers[0].StartupProbe = &v1.Probe{}
				return p
			}(),
			rt:   rt(running("s", "s2", 2*time.Minute, 1), running("a", "a1", time.Minute, 0)),
			want: v1.PodRunning},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			in := tc.in
			in.Clock = &fixedClock{now: t0}
			s := GenerateAPIPodStatus(tc.pod, tc.rt, in)
			if s.Phase != tc.want || s.Reason != tc.wantWhy {
				t.Errorf("phase = %s (%q), want %s (%q)", s.Phase, s.Reason, tc.want, tc.wantWhy)
			}
		})
	}
}

func TestPodAndHostIPs(t *testing.T) {
	for _, tc := range []struct {
		desc        string
		hostNetwork bool
		runtimeIPs  []string
		hostIPs     []string
		wantPodIPs  []string
		wantHostIP  string
	}{
		{desc: "pod network, no host IPs", runtimeIPs: []string{"10.0.0.5"}, wantPodIPs: []string{"10.0.0.5"}},
		{desc: "dual stack, IPv4 node", runtimeIPs: []string{"fd00::5", "10.0.0.5", "10.0.0.6"}, hostIPs: []string{"192.168.1.2"},
			wantPodIPs: []string{"10.0.0.5", "fd00::5"}, wantHostIP: "192.168.1.2"},
		{desc: "dual stack, IPv6 node", runtimeIPs: []string{"10.0.0.5", "fd00::5"}, hostIPs: []string{"fd00::1", "192.168.1.2"},
			wantPodIPs: []string{"fd00::5", "10.0.0.5"}, wantHostIP: "fd00::1"},
		{desc: "host network takes node IPs", hostNetwork: true, hostIPs: []string{"192.168.1.2", "fd00::1"},
			wantPodIPs: []string{"192.168.1.2", "fd00::1"}, wantHostIP: "192.168.1.2"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := newPod(v1.RestartPolicyAlways, "a")
			pod.Spec.HostNetwork = tc.hostNetwork
			ps := rt(running("a", "a1", 0, 0))
			ps.IPs = tc.runtimeIPs
			s := GenerateAPIPodStatus(pod, ps, Inputs{Clock: &fixedClock{now: t0}, HostIPs: tc.hostIPs})
			var got []string
			for _, ip := range s.PodIPs {
				got = append(got, ip.IP)
			}
			if len(got) != len(tc.wantPodIPs) {
				t.Fatalf("podIPs = %v, want %v", got, tc.wantPodIPs)
			}
			for i := range got {
				if got[i] != tc.wantPodIPs[i] {
					t.Fatalf("podIPs = %v, want %v", got, tc.wantPodIPs)
				}
			}
			if s.PodIP != tc.wantPodIPs[0] || s.HostIP != tc.wantHostIP {
				t.Errorf("podIP %q hostIP %q", s.PodIP, s.HostIP)
			}
			if len(tc.hostIPs) > 0 && len(s.HostIPs) != min(2, len(tc.hostIPs)) {
				t.Errorf("hostIPs = %v", s.HostIPs)
			}
		})
	}
}

func TestGenerateKeepsForeignConditions(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "a")
	pod.Status.Conditions = []v1.PodCondition{
		{Type: "example.com/custom", Status: v1.ConditionTrue},
		{Type: v1.PodReady, Status: v1.ConditionTrue, Reason: "stale"},
	}
	old := &v1.PodStatus{Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI"}}}
	s := GenerateAPIPodStatus(pod, rt(), Inputs{Clock: &fixedClock{now: t0}, OldStatus: old})
	if c := condition(s, "example.com/custom"); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("custom condition = %+v", c)
	}
	if c := condition(s, v1.DisruptionTarget); c == nil || c.Reason != "EvictionByEvictionAPI" {
		t.Errorf("DisruptionTarget = %+v", c)
	}
	if c := condition(s, v1.PodReady); c.Status != v1.ConditionFalse || c.Reason == "stale" {
		t.Errorf("Ready = %+v, want regenerated", c)
	}
	if pod.Status.Conditions[1].Reason != "stale" {
		t.Error("GenerateAPIPodStatus modified the pod")
	}
}

// A pod whose sandbox stopped (Completed, Failed) keeps the IPs it had: the
// runtime reports none for a stopped sandbox (kubelet GenericPLEG.getPodIPs).
func TestStoppedPodKeepsItsIPs(t *testing.T) {
	old := &v1.PodStatus{PodIP: "10.0.0.5", PodIPs: []v1.PodIP{{IP: "10.0.0.5"}}}
	for _, tc := range []struct {
		desc       string
		sandbox    runtimeapi.PodSandboxState
		runtimeIPs []string
		old        *v1.PodStatus
		want       string
	}{
		{desc: "sandbox stopped, no IPs: the old ones", sandbox: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, old: old, want: "10.0.0.5"},
		{desc: "sandbox stopped, no old IPs: none", sandbox: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, want: ""},
		{desc: "sandbox ready with a new IP: the new one", sandbox: runtimeapi.PodSandboxState_SANDBOX_READY, runtimeIPs: []string{"10.0.0.9"}, old: old, want: "10.0.0.9"},
		{desc: "sandbox ready without IPs: none (the runtime says so)", sandbox: runtimeapi.PodSandboxState_SANDBOX_READY, old: old, want: ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := newPod(v1.RestartPolicyNever, "a")
			ps := rt(exited("a", "a1", 0, 0, 0))
			ps.IPs = tc.runtimeIPs
			ps.SandboxStatuses[0].State = tc.sandbox
			s := GenerateAPIPodStatus(pod, ps, Inputs{Clock: &fixedClock{now: t0}, OldStatus: tc.old})
			if s.PodIP != tc.want || len(s.PodIPs) != len(strings.Fields(tc.want)) {
				t.Errorf("podIP %q podIPs %v, want %q", s.PodIP, s.PodIPs, tc.want)
			}
		})
	}
}
