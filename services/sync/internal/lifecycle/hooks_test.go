package lifecycle

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/testwait"
	"github.com/splitlet/splitlet/services/sync/internal/status"
)

func TestPostStart(t *testing.T) {
	tests := []struct {
		desc      string
		lifecycle *v1.Lifecycle
		execer    *scriptedExecer
		wantErr   bool
		wantMsg   string // prefix
		wantEvent []string
	}{
		{desc: "no hook: nothing runs", execer: &scriptedExecer{code: 1}},
		{desc: "a passing hook", lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"init"}}}},
			execer: &scriptedExecer{}},
		{desc: "a failing hook: FailedPostStartHook without the output, and the kubelet's message",
			lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"init"}}}},
			execer:    &scriptedExecer{stdout: "token=s3cret", code: 1}, wantErr: true,
			wantMsg:   `Exec lifecycle hook ([init]) for Container "app" in Pod "web_ns(uid-1)" failed - error: command 'init' exited with 1: , message: "token=s3cret"`,
			wantEvent: []string{"Warning FailedPostStartHook app: PostStartHook failed"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			rec := &fakeRecorder{}
			hr := NewHandlerRunner(Options{Execer: tc.execer, Recorder: rec})
			msg, err := hr.PostStart(context.Background(), testID, testPod(), &v1.Container{Name: "app", Lifecycle: tc.lifecycle})
			if tc.wantErr != (err != nil) || (tc.wantErr && !errors.Is(err, ErrPostStartHook)) {
				t.Fatalf("err = %v, want one wrapping ErrPostStartHook: %v", err, tc.wantErr)
			}
			if msg != tc.wantMsg {
				t.Errorf("msg = %q, want %q", msg, tc.wantMsg)
			}
			if ev := rec.list(); !slices.Equal(ev, tc.wantEvent) {
				t.Errorf("events = %q, want %q", ev, tc.wantEvent)
			}
			if tc.lifecycle == nil && len(tc.execer.calls) != 0 {
				t.Errorf("exec ran without a hook: %q", tc.execer.calls)
			}
		})
	}
}

func TestPreStop(t *testing.T) {
	const unit = 50 * time.Millisecond
	sleep := func(s int64) *v1.Lifecycle {
		return &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: s}}}
	}
	execHook := &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"drain"}}}}
	tests := []struct {
		desc      string
		lifecycle *v1.Lifecycle
		execer    *scriptedExecer
		grace     int64
		wantMin   int64 // remaining grace, inclusive range: the hook's
		wantMax   int64 // time is measured in whole units
		wantEvent []string
		maxTime   time.Duration
	}{
		{desc: "no hook: the whole grace period", grace: 30, wantMin: 30, wantMax: 30},
		{desc: "a short grace period is raised to the minimum", grace: 1, wantMin: 2, wantMax: 2},
		{desc: "the hook's time comes out of the grace period", lifecycle: sleep(3), grace: 10, wantMin: 5, wantMax: 7},
		{desc: "a hook longer than the grace period is cut off; the minimum remains",
			lifecycle: sleep(1000), grace: 3, wantMin: 2, wantMax: 2, maxTime: 20 * unit},
		{desc: "zero grace runs no hook", lifecycle: sleep(1000), grace: 0, wantMin: 2, wantMax: 2, maxTime: 20 * unit},
		{desc: "a failing hook records FailedPreStopHook and still stops", lifecycle: execHook,
			execer: &scriptedExecer{code: 2}, grace: 30, wantMin: 29, wantMax: 30,
			wantEvent: []string{"Warning FailedPreStopHook app: PreStopHook failed"}},
		{desc: "a hung exec hook is bounded by the grace period", lifecycle: execHook,
			execer: &scriptedExecer{block: true}, grace: 3, wantMin: 2, wantMax: 2, maxTime: 20 * unit,
			wantEvent: []string{"Warning FailedPreStopHook app: PreStopHook failed"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			rec := &fakeRecorder{}
			execer := tc.execer
			if execer == nil {
				execer = &scriptedExecer{}
			}
			hr := NewHandlerRunner(Options{Execer: execer, Recorder: rec, TimeUnit: unit})
			start := time.Now()
			got := hr.PreStop(context.Background(), testID, testPod(), &v1.Container{Name: "app", Lifecycle: tc.lifecycle}, tc.grace)
			if got < tc.wantMin || got > tc.wantMax {
				t.Errorf("remaining grace = %d, want %d..%d", got, tc.wantMin, tc.wantMax)
			}
			if tc.maxTime > 0 && time.Since(start) > tc.maxTime {
				t.Errorf("PreStop took %v, more than the grace period allows", time.Since(start))
			}
			// A cut-off hook reports its failure from its own goroutine.
			testwait.For(t, "the hook's events", func() bool { return len(rec.list()) >= len(tc.wantEvent) })
			if ev := rec.list(); !slices.Equal(ev, tc.wantEvent) {
				t.Errorf("events = %q, want %q", ev, tc.wantEvent)
			}
		})
	}
}

func TestRemainingGracePeriod(t *testing.T) {
	tests := []struct {
		desc         string
		grace, spent int64
		want         int64
	}{
		{desc: "nothing spent", grace: 30, want: 30},
		{desc: "some spent", grace: 30, spent: 12, want: 18},
		{desc: "all spent: the minimum", grace: 30, spent: 30, want: 2},
		{desc: "more than all: the minimum", grace: 5, spent: 9, want: 2},
		{desc: "exactly the minimum left", grace: 10, spent: 8, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := RemainingGracePeriod(tc.grace, tc.spent); got != tc.want {
				t.Errorf("RemainingGracePeriod(%d, %d) = %d, want %d", tc.grace, tc.spent, got, tc.want)
			}
		})
	}
}

func TestTerminationGracePeriod(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	c := &v1.Container{
		LivenessProbe: &v1.Probe{TerminationGracePeriodSeconds: i64(5)},
		StartupProbe:  &v1.Probe{TerminationGracePeriodSeconds: i64(7)},
	}
	tests := []struct {
		desc     string
		deletion *int64
		podGrace *int64
		c        *v1.Container
		reason   string
		want     int64
	}{
		{desc: "deletion grace period wins", deletion: i64(10), podGrace: i64(60), c: c, reason: KillReasonLivenessProbe, want: 10},
		{desc: "liveness probe's own grace period", podGrace: i64(60), c: c, reason: KillReasonLivenessProbe, want: 5},
		{desc: "startup probe's own grace period", podGrace: i64(60), c: c, reason: KillReasonStartupProbe, want: 7},
		{desc: "other kills use the pod's", podGrace: i64(60), c: c, reason: "FailedPostStartHook", want: 60},
		{desc: "probe without its own uses the pod's", podGrace: i64(60), c: &v1.Container{LivenessProbe: &v1.Probe{}}, reason: KillReasonLivenessProbe, want: 60},
		{desc: "nothing set: the minimum", c: c, reason: KillReasonLivenessProbe, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			pod := testPod()
			pod.DeletionGracePeriodSeconds = tc.deletion
			pod.Spec.TerminationGracePeriodSeconds = tc.podGrace
			if got := TerminationGracePeriod(pod, tc.c, tc.reason); got != tc.want {
				t.Errorf("TerminationGracePeriod = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestPostStartErrorText(t *testing.T) {
	// status.ReasonCache takes the waiting reason from the innermost error
	// of a single-wrap chain: it must be the kubelet's "PostStartHookError".
	if ErrPostStartHook.Error() != "PostStartHookError" {
		t.Fatalf("ErrPostStartHook = %q", ErrPostStartHook)
	}
	_, err := NewHandlerRunner(Options{Execer: &scriptedExecer{code: 1}}).PostStart(context.Background(), testID, testPod(),
		&v1.Container{Name: "app", Lifecycle: &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"x"}}}}})
	if !strings.HasPrefix(err.Error(), "PostStartHookError: ") {
		t.Errorf("err = %q, want it to start with PostStartHookError", err)
	}
	rc := status.NewReasonCache()
	rc.Update("uid-1", "app", err, "msg")
	if r, _ := rc.Get("uid-1", "app"); r.Reason != "PostStartHookError" {
		t.Errorf("waiting reason = %q, want PostStartHookError", r.Reason)
	}
}
