package status

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func baseStatus() *v1.PodStatus {
	started := metav1.NewTime(t0)
	return &v1.PodStatus{
		Phase: v1.PodRunning,
		Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: started},
			{Type: "example.com/custom", Status: v1.ConditionTrue},
		},
		StartTime: &started,
		ContainerStatuses: []v1.ContainerStatus{
			{Name: "a", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}},
			{Name: "b", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}},
		},
	}
}

func TestNeedsUpdate(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		mutate func(s *v1.PodStatus)
		want   bool
	}{
		{desc: "identical", mutate: func(*v1.PodStatus) {}},
		{desc: "transition time only", mutate: func(s *v1.PodStatus) {
			s.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(time.Hour))
		}},
		{desc: "probe time only", mutate: func(s *v1.PodStatus) {
			s.Conditions[0].LastProbeTime = metav1.NewTime(t0.Add(time.Hour))
		}},
		{desc: "sub-second timestamps", mutate: func(s *v1.PodStatus) {
			s.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(t0.Add(300 * time.Millisecond))
		}},
		{desc: "container order", mutate: func(s *v1.PodStatus) {
			s.ContainerStatuses[0], s.ContainerStatuses[1] = s.ContainerStatuses[1], s.ContainerStatuses[0]
		}},
		{desc: "foreign condition changed", mutate: func(s *v1.PodStatus) {
			s.Conditions[1].Status = v1.ConditionFalse
		}},
		{desc: "phase", mutate: func(s *v1.PodStatus) { s.Phase = v1.PodSucceeded }, want: true},
		{desc: "readiness condition", mutate: func(s *v1.PodStatus) {
			s.Conditions[0].Status = v1.ConditionFalse
		}, want: true},
		{desc: "condition message", mutate: func(s *v1.PodStatus) {
			s.Conditions[0].Message = "x"
		}, want: true},
		{desc: "kubelet condition added", mutate: func(s *v1.PodStatus) {
			s.Conditions = append(s.Conditions, v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue})
		}, want: true},
		{desc: "kubelet condition removed (a resize done)", mutate: func(s *v1.PodStatus) {
			s.Conditions = s.Conditions[1:]
		}, want: true},
		{desc: "container ready", mutate: func(s *v1.PodStatus) { s.ContainerStatuses[1].Ready = false }, want: true},
		{desc: "restart count", mutate: func(s *v1.PodStatus) { s.ContainerStatuses[1].RestartCount = 1 }, want: true},
		{desc: "second-level start time", mutate: func(s *v1.PodStatus) {
			s.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(t0.Add(time.Second))
		}, want: true},
		{desc: "pod IP", mutate: func(s *v1.PodStatus) { s.PodIP = "10.0.0.9" }, want: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			old := baseStatus()
			s := baseStatus()
			tc.mutate(s)
			if got := NeedsUpdate(old, s); got != tc.want {
				t.Errorf("NeedsUpdate = %t, want %t", got, tc.want)
			}
		})
	}
	if !NeedsUpdate(nil, baseStatus()) {
		t.Error("NeedsUpdate(nil, s) = false")
	}
}

func TestNormalizeBoundsMessages(t *testing.T) {
	pod := newPod(v1.RestartPolicyNever, "a", "b", "c", "d")
	s := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{
		Terminated: &v1.ContainerStateTerminated{Message: strings.Repeat("x", 5000), FinishedAt: metav1.NewTime(t0.Add(999 * time.Millisecond))},
	}}}}
	normalizeStatus(pod, s)
	term := s.ContainerStatuses[0].State.Terminated
	if len(term.Message) != 12*1024/4 {
		t.Errorf("message length = %d, want %d (12 KiB over 4 containers)", len(term.Message), 12*1024/4)
	}
	if !term.FinishedAt.Time.Equal(t0) {
		t.Errorf("finishedAt = %v, want truncated to %v", term.FinishedAt, t0)
	}
}

func TestMergePodStatus(t *testing.T) {
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		desc      string
		api       v1.PodStatus
		status    v1.PodStatus
		delay     bool
		wantPhase v1.PodPhase
		check     func(t *testing.T, s v1.PodStatus)
	}{
		{
			desc: "foreign conditions kept from the API, kubelet ones from the status",
			api: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
				{Type: "example.com/lb", Status: v1.ConditionTrue},
				{Type: v1.PodReady, Status: v1.ConditionFalse},
			}},
			status:    v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}},
			wantPhase: v1.PodRunning,
			check: func(t *testing.T, s v1.PodStatus) {
				if c := condition(s, "example.com/lb"); c == nil {
					t.Error("foreign condition dropped")
				}
				if c := condition(s, v1.PodReady); c == nil || c.Status != v1.ConditionTrue {
					t.Errorf("Ready = %+v", c)
				}
			},
		},
		{
			desc:      "terminal transition delayed",
			api:       v1.PodStatus{Phase: v1.PodRunning, Reason: ""},
			status:    v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted"},
			delay:     true,
			wantPhase: v1.PodRunning,
			check: func(t *testing.T, s v1.PodStatus) {
				if s.Reason != "" {
					t.Errorf("reason = %q, want the API's", s.Reason)
				}
			},
		},
		{
			desc: "terminal phase forces ready False and sends DisruptionTarget",
			api:  v1.PodStatus{Phase: v1.PodRunning},
			status: v1.PodStatus{Phase: v1.PodSucceeded, Conditions: []v1.PodCondition{
				{Type: v1.PodReady, Status: v1.ConditionTrue},
				{Type: v1.ContainersReady, Status: v1.ConditionTrue},
				{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "TerminationByKubelet"},
			}},
			wantPhase: v1.PodSucceeded,
			check: func(t *testing.T, s v1.PodStatus) {
				for _, ct := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
					if c := condition(s, ct); c == nil || c.Status != v1.ConditionFalse || c.Reason != PodCompleted {
						t.Errorf("%s = %+v", ct, c)
					}
				}
				if c := condition(s, v1.DisruptionTarget); c == nil || !c.LastTransitionTime.Time.Equal(now) {
					t.Errorf("DisruptionTarget = %+v", c)
				}
			},
		},
		{
			desc:      "DisruptionTarget held back without a terminal transition",
			api:       v1.PodStatus{Phase: v1.PodRunning},
			status:    v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.DisruptionTarget, Status: v1.ConditionTrue}}},
			wantPhase: v1.PodRunning,
			check: func(t *testing.T, s v1.PodStatus) {
				if c := condition(s, v1.DisruptionTarget); c != nil {
					t.Errorf("DisruptionTarget sent early: %+v", c)
				}
			},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			s := MergePodStatus(tc.api, tc.status, tc.delay, now)
			if s.Phase != tc.wantPhase {
				t.Errorf("phase = %s, want %s", s.Phase, tc.wantPhase)
			}
			tc.check(t, s)
		})
	}
}

func TestCheckContainerStateTransition(t *testing.T) {
	terminated := func(code int32) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}
	}
	runningState := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	always, never := v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever
	restartOn42 := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	restartAllOn42 := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	for _, tc := range []struct {
		desc    string
		policy  v1.RestartPolicy
		ctr     v1.Container // the container's own policy and rules
		old     v1.ContainerState
		new     v1.ContainerState
		init    bool
		wantErr bool
	}{
		// ContainerRestartRules: the container's own policy and rules.
		{desc: "Never pod, Always container may restart", policy: v1.RestartPolicyNever, ctr: v1.Container{RestartPolicy: &always},
			old: terminated(0), new: runningState},
		{desc: "Never pod, Never container with a matching rule may restart", policy: v1.RestartPolicyNever,
			ctr: v1.Container{RestartPolicy: &never, RestartPolicyRules: restartOn42}, old: terminated(42), new: runningState},
		{desc: "Never pod, Never container, rule not matching", policy: v1.RestartPolicyNever,
			ctr: v1.Container{RestartPolicy: &never, RestartPolicyRules: restartOn42}, old: terminated(1), new: runningState, wantErr: true},
		{desc: "a pod that may restart in place is not checked", policy: v1.RestartPolicyNever,
			ctr: v1.Container{RestartPolicy: &never, RestartPolicyRules: restartAllOn42}, old: terminated(1), new: runningState},
		{desc: "Never pod, Always init container (a sidecar) may restart", policy: v1.RestartPolicyNever, ctr: v1.Container{RestartPolicy: &always},
			old: terminated(1), new: runningState, init: true},
		{desc: "OnFailure pod, OnFailure init container that succeeded", policy: v1.RestartPolicyOnFailure,
			old: terminated(0), new: runningState, init: true, wantErr: true},
		{desc: "Always may restart", policy: v1.RestartPolicyAlways, old: terminated(0), new: runningState},
		{desc: "OnFailure restarts failures", policy: v1.RestartPolicyOnFailure, old: terminated(1), new: runningState},
		{desc: "OnFailure never restarts successes", policy: v1.RestartPolicyOnFailure, old: terminated(0), new: runningState, wantErr: true},
		{desc: "Never", policy: v1.RestartPolicyNever, old: terminated(1), new: runningState, wantErr: true},
		{desc: "Never, init container", policy: v1.RestartPolicyNever, old: terminated(0), new: runningState, init: true, wantErr: true},
		{desc: "Never, still terminated", policy: v1.RestartPolicyNever, old: terminated(1), new: terminated(1)},
		{desc: "Never, running before", policy: v1.RestartPolicyNever, old: runningState, new: terminated(0)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			old := &v1.PodStatus{}
			s := &v1.PodStatus{}
			if tc.init {
				old.InitContainerStatuses = []v1.ContainerStatus{{Name: "a", State: tc.old}}
				s.InitContainerStatuses = []v1.ContainerStatus{{Name: "a", State: tc.new}}
			} else {
				old.ContainerStatuses = []v1.ContainerStatus{{Name: "a", State: tc.old}}
				s.ContainerStatuses = []v1.ContainerStatus{{Name: "a", State: tc.new}}
			}
			spec := &v1.PodSpec{RestartPolicy: tc.policy}
			ctr := tc.ctr
			ctr.Name = "a"
			if tc.init {
				spec.InitContainers = []v1.Container{ctr}
			} else {
				spec.Containers = []v1.Container{ctr}
			}
			err := CheckContainerStateTransition(old, s, spec)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %t", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, errdefs.ErrFailedPrecondition) {
				t.Errorf("err %v does not wrap ErrFailedPrecondition", err)
			}
		})
	}
}

func TestTerminatePod(t *testing.T) {
	waiting := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: PodInitializing}}
	runningState := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	done := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	for _, tc := range []struct {
		desc        string
		pod         *v1.Pod
		status      v1.PodStatus
		wantPhase   v1.PodPhase
		wantUnknown []string // containers that must end ContainerStatusUnknown
		wantWaiting []string // containers that must stay waiting
	}{
		{
			desc: "running containers become unknown, phase Failed",
			pod:  newPod(v1.RestartPolicyAlways, "a", "b"),
			status: v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{
				{Name: "a", State: runningState}, {Name: "b", State: done}}},
			wantPhase: v1.PodFailed, wantUnknown: []string{"a"},
		},
		{
			desc: "terminal phase kept",
			pod:  newPod(v1.RestartPolicyNever, "a"),
			status: v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{
				{Name: "a", State: done}}},
			wantPhase: v1.PodSucceeded,
		},
		{
			desc: "not initialized: regular containers stay waiting, attempted init unknown",
			pod:  withInit(newPod(v1.RestartPolicyAlways, "a"), "i1", "i2"),
			status: v1.PodStatus{Phase: v1.PodPending,
				InitContainerStatuses: []v1.ContainerStatus{{Name: "i1", State: runningState}, {Name: "i2", State: waiting}},
				ContainerStatuses:     []v1.ContainerStatus{{Name: "a", State: waiting}}},
			wantPhase: v1.PodFailed, wantUnknown: []string{"i1"}, wantWaiting: []string{"a", "i2"},
		},
		{
			desc: "static pod keeps its phase",
			pod: func() *v1.Pod {
				p := newPod(v1.RestartPolicyAlways, "a")
				p.Annotations = map[string]string{configSourceAnnotationKey: "file"}
				return p
			}(),
			status:    v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: runningState}}},
			wantPhase: v1.PodRunning, wantUnknown: []string{"a"},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			before := fmt.Sprintf("%+v", tc.status)
			s := TerminatePod(tc.pod, tc.status)
			if s.Phase != tc.wantPhase {
				t.Errorf("phase = %s, want %s", s.Phase, tc.wantPhase)
			}
			all := append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...)
			for _, name := range tc.wantUnknown {
				cs := findStatus(all, name)
				if term := cs.State.Terminated; term == nil || term.Reason != ContainerStatusUnknown || term.ExitCode != 137 ||
					term.Message != "The container could not be located when the pod was terminated" {
					t.Errorf("%s = %+v, want ContainerStatusUnknown", name, cs.State)
				}
			}
			for _, name := range tc.wantWaiting {
				if cs := findStatus(all, name); cs.State.Waiting == nil {
					t.Errorf("%s = %+v, want still waiting", name, cs.State)
				}
			}
			if after := fmt.Sprintf("%+v", tc.status); after != before {
				t.Error("TerminatePod modified its argument")
			}
		})
	}
}

func TestReasonCache(t *testing.T) {
	sentinel := errors.New("CrashLoopBackOff")
	c := NewReasonCache()
	c.Update("uid-1", "a", fmt.Errorf("starting a: %w", sentinel), "back-off 10s")
	c.Update("uid-1", "b", errors.New("ErrImagePull"), "not found")
	c.Update("uid-2", "a", errors.New("CreateContainerConfigError"), "no secret")

	for _, tc := range []struct {
		desc string
		uid  string
		name string
		want WaitingReason
		ok   bool
	}{
		{desc: "wrapped sentinel gives its own text", uid: "uid-1", name: "a", want: WaitingReason{"CrashLoopBackOff", "back-off 10s"}, ok: true},
		{desc: "plain error", uid: "uid-1", name: "b", want: WaitingReason{"ErrImagePull", "not found"}, ok: true},
		{desc: "other pod, same name", uid: "uid-2", name: "a", want: WaitingReason{"CreateContainerConfigError", "no secret"}, ok: true},
		{desc: "absent", uid: "uid-1", name: "c"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, ok := c.Get(typesUID(tc.uid), tc.name)
			if ok != tc.ok || got != tc.want {
				t.Errorf("Get = %+v, %t; want %+v, %t", got, ok, tc.want, tc.ok)
			}
		})
	}
	c.Update("uid-1", "a", nil, "")
	if _, ok := c.Get("uid-1", "a"); ok {
		t.Error("Update with nil error did not remove the entry")
	}
	c.RemovePod("uid-1")
	if _, ok := c.Get("uid-1", "b"); ok {
		t.Error("RemovePod left an entry")
	}
	if _, ok := c.Get("uid-2", "a"); !ok {
		t.Error("RemovePod removed another pod's entry")
	}
}
