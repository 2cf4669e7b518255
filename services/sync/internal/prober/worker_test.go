package prober

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

const (
	ok   = kuberuntime.ProbeSuccess
	fail = kuberuntime.ProbeFailure
	unk  = kuberuntime.ProbeUnknown
)

var (
	pass   = execReply{stdout: "ok"}
	failed = execReply{stdout: "not healthy", code: 1}
)

// drain empties the results managers' update channels in the background,
// as the sync loop would.
func drain(ctx context.Context, m *Manager) {
	for _, rm := range []*ResultsManager{m.liveness, m.readiness, m.startup} {
		go func() {
			for {
				select {
				case <-rm.Updates():
				case <-ctx.Done():
					return
				}
			}
		}()
	}
}

func TestWorkerThresholds(t *testing.T) {
	tests := []struct {
		desc      string
		pt        probeType
		mod       func(*v1.Probe)
		started   bool
		replies   []execReply
		want      []kuberuntime.ProbeResult // after each doProbe
		wantCalls int
	}{
		{desc: "liveness failureThreshold 3 needs 3 consecutive failures, then holds",
			pt: liveness, mod: func(p *v1.Probe) { p.FailureThreshold = 3 }, started: true,
			replies: []execReply{failed}, want: []kuberuntime.ProbeResult{ok, ok, fail, fail, fail}, wantCalls: 3},
		{desc: "liveness failures that are not consecutive do not count",
			pt: liveness, mod: func(p *v1.Probe) { p.FailureThreshold = 3 }, started: true,
			replies: []execReply{failed, failed, pass, failed, failed, failed},
			want:    []kuberuntime.ProbeResult{ok, ok, ok, ok, ok, fail}, wantCalls: 6},
		{desc: "readiness starts not ready; successThreshold 2 needs 2 successes",
			pt: readiness, mod: func(p *v1.Probe) { p.SuccessThreshold = 2 }, started: true,
			replies: []execReply{pass}, want: []kuberuntime.ProbeResult{fail, ok, ok}, wantCalls: 3},
		{desc: "readiness goes back to not ready after failureThreshold failures and keeps probing",
			pt: readiness, mod: func(p *v1.Probe) { p.FailureThreshold = 2 }, started: true,
			replies: []execReply{pass, failed, failed, pass},
			want:    []kuberuntime.ProbeResult{ok, ok, fail, ok}, wantCalls: 4},
		{desc: "startup failureThreshold 2 fails then holds",
			pt: startup, mod: func(p *v1.Probe) { p.FailureThreshold = 2 }, started: false,
			replies: []execReply{failed}, want: []kuberuntime.ProbeResult{unk, fail, fail}, wantCalls: 2},
		{desc: "startup success is final for the instance",
			pt: startup, started: false,
			replies: []execReply{pass}, want: []kuberuntime.ProbeResult{ok, ok, ok}, wantCalls: 1},
		{desc: "liveness waits for the startup probe",
			pt: liveness, started: false,
			replies: []execReply{failed}, want: []kuberuntime.ProbeResult{ok, ok}, wantCalls: 0},
		{desc: "readiness waits for the startup probe",
			pt: readiness, started: false,
			replies: []execReply{pass}, want: []kuberuntime.ProbeResult{fail, fail}, wantCalls: 0},
		{desc: "startup stops probing once the container has started",
			pt: startup, started: true,
			replies: []execReply{failed}, want: []kuberuntime.ProbeResult{unk, unk}, wantCalls: 0},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, ex := newFakeStatus(), &fakeExecer{script: tc.replies}
			m := newTestManager(ctx, st, ex, &fakeRecorder{}, time.Millisecond)
			drain(ctx, m)
			c := v1.Container{Name: "app"}
			switch tc.pt {
			case liveness:
				c.LivenessProbe = execProbe(tc.mod)
			case readiness:
				c.ReadinessProbe = execProbe(tc.mod)
			case startup:
				c.StartupProbe = execProbe(tc.mod)
			}
			pod := testPod(c)
			st.set(pod.UID, runningStatus("app", "containerd://c1", time.Now(), tc.started))
			w := newWorker(m, tc.pt, pod, c)
			id := container.BuildContainerID("containerd", "c1")
			var got []kuberuntime.ProbeResult
			for range tc.want {
				if !w.doProbe() {
					t.Fatal("worker stopped")
				}
				r, _ := w.results.Get(id)
				got = append(got, r)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("results = %v, want %v", got, tc.want)
			}
			if ex.callCount() != tc.wantCalls {
				t.Errorf("exec calls = %d, want %d", ex.callCount(), tc.wantCalls)
			}
		})
	}
}

func TestWorkerInitialDelay(t *testing.T) {
	const unit = 10 * time.Millisecond
	tests := []struct {
		desc      string
		startedAt time.Duration // before now
		wantCalls int
	}{
		{desc: "within initialDelaySeconds: not probed", startedAt: 2 * unit, wantCalls: 0},
		{desc: "past initialDelaySeconds: probed", startedAt: 6 * unit, wantCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, ex := newFakeStatus(), &fakeExecer{script: []execReply{pass}}
			m := newTestManager(ctx, st, ex, nil, unit)
			drain(ctx, m)
			c := v1.Container{Name: "app", LivenessProbe: execProbe(func(p *v1.Probe) { p.InitialDelaySeconds = 5 })}
			pod := testPod(c)
			st.set(pod.UID, runningStatus("app", "containerd://c1", time.Now().Add(-tc.startedAt), true))
			newWorker(m, liveness, pod, c).doProbe()
			if ex.callCount() != tc.wantCalls {
				t.Errorf("exec calls = %d, want %d", ex.callCount(), tc.wantCalls)
			}
		})
	}
}

func TestWorkerNewContainerResetsResults(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ex := newFakeStatus(), &fakeExecer{script: []execReply{failed}}
	m := newTestManager(ctx, st, ex, nil, time.Millisecond)
	drain(ctx, m)
	c := v1.Container{Name: "app", LivenessProbe: execProbe(nil)}
	pod := testPod(c)
	st.set(pod.UID, runningStatus("app", "containerd://c1", time.Now(), true))
	w := newWorker(m, liveness, pod, c)
	old, cur := container.BuildContainerID("containerd", "c1"), container.BuildContainerID("containerd", "c2")

	w.doProbe()
	if got := m.Liveness(old); got != fail {
		t.Fatalf("liveness of c1 = %v, want Failure (exec calls %d)", got, ex.callCount())
	}
	w.doProbe() // on hold: no exec
	if ex.callCount() != 1 {
		t.Fatalf("exec calls while on hold = %d, want 1", ex.callCount())
	}

	// The container was restarted: the old result goes, the new instance
	// starts live and is probed again.
	ex.script = []execReply{pass}
	st.set(pod.UID, runningStatus("app", "containerd://c2", time.Now(), true))
	w.doProbe()
	if _, found := m.liveness.Get(old); found {
		t.Errorf("c1's result survived the new container")
	}
	if got := m.Liveness(cur); got != ok {
		t.Errorf("liveness of c2 = %v, want Success", got)
	}
	if ex.callCount() != 2 {
		t.Errorf("exec calls = %d, want 2 (probing resumed for c2)", ex.callCount())
	}
}

func TestWorkerStops(t *testing.T) {
	always, never := v1.RestartPolicyAlways, v1.RestartPolicyNever
	terminated := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}
	sidecar := v1.ContainerRestartPolicyAlways
	ctrNever, ctrOnFailure := v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyOnFailure
	tests := []struct {
		desc       string
		policy     v1.RestartPolicy
		ctrPolicy  *v1.ContainerRestartPolicy // the probed container's own policy
		marked     bool                       // the pod status carries AllContainersRestarting=True
		initSide   bool                       // the probed container is a sidecar
		state      *v1.ContainerState
		phase      v1.PodPhase
		deleting   bool
		pt         probeType
		wantKeep   bool
		wantResult kuberuntime.ProbeResult
	}{
		{desc: "terminated under Always: keep going, not live", policy: always, state: &terminated, pt: liveness, wantKeep: true, wantResult: fail},
		{desc: "terminated under Never: stop", policy: never, state: &terminated, pt: readiness, wantKeep: false, wantResult: fail},
		{desc: "a terminated sidecar under Never restarts: keep going", policy: never, initSide: true, state: &terminated, pt: readiness, wantKeep: true, wantResult: fail},
		// ContainerRestartRules: the container's own policy decides.
		{desc: "terminated Never container in an Always pod: stop", policy: always, ctrPolicy: &ctrNever, state: &terminated, pt: readiness, wantKeep: false, wantResult: fail},
		{desc: "failed OnFailure container in a Never pod: keep going", policy: never, ctrPolicy: &ctrOnFailure, state: &terminated, pt: readiness, wantKeep: true, wantResult: fail},
		{desc: "terminated Never container of a pod restarting in place: keep going", policy: never, ctrPolicy: &ctrNever, marked: true, state: &terminated, pt: readiness, wantKeep: true, wantResult: fail},
		{desc: "pod finished: stop", policy: always, phase: v1.PodSucceeded, pt: liveness, wantKeep: false, wantResult: unk},
		{desc: "pod being deleted: liveness reports success and stops", policy: always, deleting: true, pt: liveness, wantKeep: false, wantResult: ok},
		{desc: "pod being deleted: readiness keeps probing", policy: always, deleting: true, pt: readiness, wantKeep: true, wantResult: ok},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, ex := newFakeStatus(), &fakeExecer{script: []execReply{pass}}
			m := newTestManager(ctx, st, ex, nil, time.Millisecond)
			drain(ctx, m)
			c := v1.Container{Name: "app", LivenessProbe: execProbe(nil), ReadinessProbe: execProbe(nil), RestartPolicy: tc.ctrPolicy}
			pod := testPod(v1.Container{Name: "other"})
			if tc.initSide {
				c.RestartPolicy = &sidecar
				pod.Spec.InitContainers = []v1.Container{c}
			} else {
				pod.Spec.Containers = []v1.Container{c}
			}
			pod.Spec.RestartPolicy = tc.policy
			if tc.deleting {
				now := metav1.Now()
				pod.DeletionTimestamp = &now
			}
			s := runningStatus("app", "containerd://c1", time.Now(), true)
			if tc.initSide {
				s.InitContainerStatuses, s.ContainerStatuses = s.ContainerStatuses, nil
			}
			if tc.state != nil {
				s.InitContainerStatuses = append(s.InitContainerStatuses, s.ContainerStatuses...)
				for i := range s.InitContainerStatuses {
					s.InitContainerStatuses[i].State = *tc.state
				}
				if !tc.initSide {
					s.ContainerStatuses, s.InitContainerStatuses = s.InitContainerStatuses, nil
				}
			}
			if tc.phase != "" {
				s.Phase = tc.phase
			}
			if tc.marked {
				s.Conditions = append(s.Conditions, v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionTrue})
			}
			st.set(pod.UID, s)
			w := newWorker(m, tc.pt, pod, c)
			if keep := w.doProbe(); keep != tc.wantKeep {
				t.Errorf("keepGoing = %v, want %v", keep, tc.wantKeep)
			}
			r, _ := w.results.Get(container.BuildContainerID("containerd", "c1"))
			if r != tc.wantResult {
				t.Errorf("result = %v, want %v", r, tc.wantResult)
			}
		})
	}
}

func TestProbeEvents(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		desc      string
		pt        probeType
		reply     execReply
		wantEvent string
		wantCalls int
		wantErr   bool
	}{
		{desc: "liveness failure", pt: liveness, reply: failed, wantCalls: 1,
			wantEvent: "Warning Unhealthy app: Liveness probe failed: not healthy"},
		{desc: "readiness failure", pt: readiness, reply: failed, wantCalls: 1,
			wantEvent: "Warning Unhealthy app: Readiness probe failed: not healthy"},
		{desc: "startup failure", pt: startup, reply: failed, wantCalls: 1,
			wantEvent: "Warning Unhealthy app: Startup probe failed: not healthy"},
		{desc: "an error is retried 3 times, then reported and discarded", pt: liveness, reply: execReply{err: boom},
			wantCalls: 3, wantErr: true, wantEvent: "Warning Unhealthy app: Liveness probe errored and resulted in unknown state: boom"},
		{desc: "success records nothing", pt: liveness, reply: pass, wantCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			ex, rec := &fakeExecer{script: []execReply{tc.reply}}, &fakeRecorder{}
			pb := &prober{execer: ex, recorder: rec, timeUnit: time.Millisecond}
			c := &v1.Container{Name: "app", LivenessProbe: execProbe(nil), ReadinessProbe: execProbe(nil), StartupProbe: execProbe(nil)}
			pod := testPod(*c)
			_, err := pb.probe(context.Background(), tc.pt, pod, v1.PodStatus{}, c, container.BuildContainerID("containerd", "c1"))
			if (err != nil) != tc.wantErr {
				t.Errorf("err = %v, want error %v", err, tc.wantErr)
			}
			if ex.callCount() != tc.wantCalls {
				t.Errorf("exec calls = %d, want %d", ex.callCount(), tc.wantCalls)
			}
			events := rec.list()
			if tc.wantEvent == "" {
				if len(events) != 0 {
					t.Errorf("events = %q, want none", events)
				}
				return
			}
			if len(events) != 1 || events[0] != tc.wantEvent {
				t.Errorf("events = %q, want [%q]", events, tc.wantEvent)
			}
		})
	}
}

func TestExecProbeTimeout(t *testing.T) {
	// An exec that never answers fails once timeoutSeconds (in test units)
	// have passed, with the kubelet's message.
	rec := &fakeRecorder{}
	pb := &prober{execer: blockingExecer{}, recorder: rec, timeUnit: 20 * time.Millisecond}
	c := &v1.Container{Name: "app", LivenessProbe: execProbe(func(p *v1.Probe) {
		p.TimeoutSeconds = 2
		p.Exec.Command = []string{"sleep", "60"}
	})}
	start := time.Now()
	r, err := pb.probe(context.Background(), liveness, testPod(*c), v1.PodStatus{}, c, container.BuildContainerID("containerd", "c1"))
	if err != nil || r != fail {
		t.Fatalf("probe = (%v, %v), want Failure", r, err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("probe took %v; the timeout did not apply", elapsed)
	}
	if ev := rec.list(); len(ev) != 1 || !strings.HasSuffix(ev[0], `Liveness probe failed: command "sleep 60" timed out`) {
		t.Errorf("events = %q", ev)
	}
}

type blockingExecer struct{}

func (blockingExecer) ExecSync(ctx context.Context, _ string, _ []string, _ time.Duration) ([]byte, []byte, int32, error) {
	<-ctx.Done()
	return nil, nil, 0, ctx.Err()
}

func TestExpandStaticEnv(t *testing.T) {
	env := []v1.EnvVar{{Name: "PORT", Value: "8080"}, {Name: "SECRET", ValueFrom: &v1.EnvVarSource{}}}
	tests := []struct {
		desc string
		in   string
		want string
	}{
		{desc: "a literal variable is expanded", in: "localhost:$(PORT)/x", want: "localhost:8080/x"},
		{desc: "valueFrom variables are not", in: "$(SECRET)", want: "$(SECRET)"},
		{desc: "unknown variables stay", in: "$(NOPE)", want: "$(NOPE)"},
		{desc: "$$ escapes", in: "$$(PORT)", want: "$(PORT)"},
		{desc: "a lone $ stays", in: "a$b$", want: "a$b$"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := expandStaticEnv([]string{tc.in}, env)[0]; got != tc.want {
				t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestWorkerAfterSyncRestart(t *testing.T) {
	tests := []struct {
		desc      string
		startedAt time.Duration // before now
		wantFound bool
	}{
		{desc: "a container started before sync gets no initial readiness value", startedAt: time.Hour, wantFound: false},
		{desc: "a container started since gets the initial value", startedAt: 0, wantFound: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, ex := newFakeStatus(), &fakeExecer{script: []execReply{failed}}
			m := newTestManager(ctx, st, ex, nil, time.Millisecond)
			drain(ctx, m)
			c := v1.Container{Name: "app", ReadinessProbe: execProbe(func(p *v1.Probe) { p.FailureThreshold = 3 })}
			pod := testPod(c)
			st.set(pod.UID, runningStatus("app", "containerd://c1", time.Now().Add(-tc.startedAt), true))
			newWorker(m, readiness, pod, c).doProbe()
			r, found := m.readiness.Get(container.BuildContainerID("containerd", "c1"))
			if found != tc.wantFound || (found && r != fail) {
				t.Errorf("readiness = (%v, %v), want found=%v (Failure)", r, found, tc.wantFound)
			}
		})
	}
}
