package backoff

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// fakeClock is a hand-written settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

var _ Clock = (*fakeClock)(nil)

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestNextDoublesToCap(t *testing.T) {
	for _, tc := range []struct {
		desc string
		cfg  Config
		want []time.Duration
	}{
		{
			desc: "kubelet defaults",
			want: []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
				160 * time.Second, 300 * time.Second, 300 * time.Second, 300 * time.Second},
		},
		{
			desc: "custom curve",
			cfg:  Config{Initial: time.Second, Max: 5 * time.Second},
			want: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second},
		},
		{
			desc: "initial above max is capped",
			cfg:  Config{Initial: time.Minute, Max: 30 * time.Second},
			want: []time.Duration{30 * time.Second, 30 * time.Second},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			b := New(tc.cfg, clock)
			if got := b.Get("k"); got != 0 {
				t.Fatalf("Get on an empty table = %s, want 0", got)
			}
			for i, want := range tc.want {
				// Failures a few seconds apart: well inside the reset window.
				clock.Step(3 * time.Second)
				b.Next("k", clock.Now())
				if got := b.Get("k"); got != want {
					t.Fatalf("after %d failures: delay %s, want %s", i+1, got, want)
				}
			}
		})
	}
}

func TestResetAfterQuietPeriod(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		cfg   Config
		quiet time.Duration
		want  time.Duration
	}{
		{desc: "just under ten minutes keeps doubling", quiet: 10 * time.Minute, want: 80 * time.Second},
		{desc: "over ten minutes resets", quiet: 10*time.Minute + time.Second, want: 10 * time.Second},
		{desc: "custom reset window", cfg: Config{ResetAfter: time.Minute}, quiet: 61 * time.Second, want: 10 * time.Second},
		{desc: "reset defaults to twice a custom max", cfg: Config{Max: time.Minute}, quiet: 119 * time.Second, want: 60 * time.Second},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			b := New(tc.cfg, clock)
			for range 3 { // 10s, 20s, 40s
				b.Next("k", clock.Now())
			}
			clock.Step(tc.quiet)
			b.Next("k", clock.Now())
			if got := b.Get("k"); got != tc.want {
				t.Errorf("delay after %s quiet = %s, want %s", tc.quiet, got, tc.want)
			}
		})
	}
}

func TestIndependentKeys(t *testing.T) {
	clock := newFakeClock()
	b := New(Config{}, clock)
	for range 4 {
		b.Next("a", clock.Now())
	}
	b.Next("b", clock.Now())
	if got := b.Get("a"); got != 80*time.Second {
		t.Errorf("a = %s, want 80s", got)
	}
	if got := b.Get("b"); got != 10*time.Second {
		t.Errorf("b = %s, want 10s (a's failures must not count)", got)
	}
	b.Reset("a")
	if got := b.Get("a"); got != 0 {
		t.Errorf("a after Reset = %s, want 0", got)
	}
	if got := b.Get("b"); got != 10*time.Second {
		t.Errorf("b after resetting a = %s, want 10s", got)
	}
}

func TestIsInBackOffSince(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		failures  int           // Next calls before the check
		sinceExit time.Duration // how long ago the container finished
		lastNext  time.Duration // how long ago the last Next happened
		want      bool
	}{
		{desc: "no entry", failures: 0, want: false},
		{desc: "exited 5s ago, delay 10s", failures: 1, sinceExit: 5 * time.Second, want: true},
		{desc: "exited 10s ago, delay 10s", failures: 1, sinceExit: 10 * time.Second, want: false},
		{desc: "exited 15s ago, delay 20s", failures: 2, sinceExit: 15 * time.Second, want: true},
		{desc: "exited 25s ago, delay 20s", failures: 2, sinceExit: 25 * time.Second, want: false},
		// The container ran cleanly for longer than the reset window after
		// the last back-off step: its exit starts a fresh history.
		{desc: "expired entry", failures: 5, sinceExit: time.Second, lastNext: 11 * time.Minute, want: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			clock := newFakeClock()
			b := New(Config{}, clock)
			for range tc.failures {
				b.Next("k", clock.Now())
			}
			clock.Step(tc.lastNext)
			exitedAt := clock.Now()
			clock.Step(tc.sinceExit)
			if got := b.IsInBackOffSince("k", exitedAt); got != tc.want {
				t.Errorf("IsInBackOffSince = %t, want %t (delay %s)", got, tc.want, b.Get("k"))
			}
		})
	}
}

func TestIsInBackOffSinceUpdate(t *testing.T) {
	clock := newFakeClock()
	b := New(Config{}, clock)
	if b.IsInBackOffSinceUpdate("k", clock.Now()) {
		t.Fatal("backing off with no entry")
	}
	b.Next("k", clock.Now())
	clock.Step(9 * time.Second)
	if !b.IsInBackOffSinceUpdate("k", clock.Now()) {
		t.Error("9s after the update with a 10s delay: want backing off")
	}
	clock.Step(time.Second)
	if b.IsInBackOffSinceUpdate("k", clock.Now()) {
		t.Error("10s after the update with a 10s delay: want not backing off")
	}
}

func TestGC(t *testing.T) {
	clock := newFakeClock()
	b := New(Config{}, clock)
	b.Next("old", clock.Now())
	clock.Step(6 * time.Minute)
	b.Next("fresh", clock.Now())
	clock.Step(4*time.Minute + time.Second) // old: 10m1s, fresh: 4m1s
	b.GC()
	if b.Get("old") != 0 {
		t.Error("entry idle past the reset window survived GC")
	}
	if b.Get("fresh") != 10*time.Second {
		t.Error("recent entry was collected")
	}
	if b.Len() != 1 {
		t.Errorf("Len = %d, want 1", b.Len())
	}
}

func testPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "1234-uid"}}
}

func TestStableKey(t *testing.T) {
	pod := testPod()
	c := &v1.Container{Name: "app", Image: "busybox:1.36"}
	key := StableKey(pod, c)
	want := fmt.Sprintf("web_default_1234-uid_app_%x", container.HashContainer(c))
	if key != want {
		t.Errorf("StableKey = %q, want %q", key, want)
	}
	changed := &v1.Container{Name: "app", Image: "busybox:1.37"}
	if StableKey(pod, changed) == key {
		t.Error("a new image must give a new key, so its back-off starts afresh")
	}
}

func TestDoBackOff(t *testing.T) {
	clock := newFakeClock()
	b := New(Config{}, clock)
	pod := testPod()
	spec := &v1.Container{Name: "app", Image: "busybox"}

	// crash simulates one run of the container that exits at the clock's
	// now, and returns the runtime's view.
	attempt := 0
	crash := func() *container.PodStatus {
		attempt++
		return &container.PodStatus{ContainerStatuses: []*container.Status{
			{ID: container.BuildContainerID("containerd", fmt.Sprint(attempt)), Name: "app",
				State: container.ContainerStateExited, ExitCode: 1, FinishedAt: clock.Now()},
		}}
	}

	if in, _, err := b.DoBackOff(pod, spec, &container.PodStatus{}); in || err != nil {
		t.Fatalf("no exited instance: DoBackOff = %t, %v; want no back-off", in, err)
	}
	running := &container.PodStatus{ContainerStatuses: []*container.Status{{Name: "app", State: container.ContainerStateRunning}}}
	if in, _, _ := b.DoBackOff(pod, spec, running); in {
		t.Fatal("running instance: want no back-off")
	}

	// First exit: restarted at once, delay armed at 10s.
	ps := crash()
	if in, _, _ := b.DoBackOff(pod, spec, ps); in {
		t.Fatal("first exit must restart at once")
	}
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second} {
		ps = crash()
		clock.Step(want - time.Second)
		in, msg, err := b.DoBackOff(pod, spec, ps)
		if !in || !errors.Is(err, ErrCrashLoopBackOff) {
			t.Fatalf("crash %d, %s after exit: DoBackOff = %t, %v; want back-off", i+2, want-time.Second, in, err)
		}
		wantMsg := fmt.Sprintf("back-off %s restarting failed container=app pod=web_default(1234-uid)", want)
		if msg != wantMsg {
			t.Errorf("message = %q, want %q", msg, wantMsg)
		}
		if err.Error() != "CrashLoopBackOff" {
			t.Errorf("reason = %q, want CrashLoopBackOff", err.Error())
		}
		clock.Step(time.Second)
		if in, _, _ := b.DoBackOff(pod, spec, ps); in {
			t.Fatalf("crash %d, %s after exit: still backing off", i+2, want)
		}
	}
}

func TestImagePullBackOff(t *testing.T) {
	clock := newFakeClock()
	b := New(Config{}, clock)
	pullErr := errors.New("rpc error: code = NotFound desc = not found")

	if msg, err := b.CheckImagePull("uid-1", "busybox:bad"); err != nil || msg != "" {
		t.Fatalf("first pull: CheckImagePull = %q, %v; want allowed", msg, err)
	}
	msg, err := b.ImagePullFailed("uid-1", "busybox:bad", pullErr)
	if !errors.Is(err, ErrImagePull) || err.Error() != "ErrImagePull" || msg != pullErr.Error() {
		t.Fatalf("ImagePullFailed = %q, %v", msg, err)
	}

	clock.Step(5 * time.Second)
	msg, err = b.CheckImagePull("uid-1", "busybox:bad")
	if !errors.Is(err, ErrImagePullBackOff) || err.Error() != "ImagePullBackOff" {
		t.Fatalf("5s after a failure: err = %v, want ImagePullBackOff", err)
	}
	if want := `Back-off pulling image "busybox:bad": ErrImagePull: ` + pullErr.Error(); msg != want {
		t.Errorf("message = %q, want %q", msg, want)
	}
	if _, err := b.CheckImagePull("uid-2", "busybox:bad"); err != nil {
		t.Errorf("another pod's pull must not back off: %v", err)
	}

	clock.Step(5 * time.Second)
	if _, err := b.CheckImagePull("uid-1", "busybox:bad"); err != nil {
		t.Errorf("10s after the failure with a 10s delay: %v, want allowed", err)
	}
	_, _ = b.ImagePullFailed("uid-1", "busybox:bad", errors.New("unauthorized"))
	if got := b.Get(ImagePullKey("uid-1", "busybox:bad")); got != 20*time.Second {
		t.Errorf("second failure: delay %s, want 20s", got)
	}
	// The back-off message carries the latest pull's error.
	if msg, _ := b.CheckImagePull("uid-1", "busybox:bad"); msg != `Back-off pulling image "busybox:bad": ErrImagePull: unauthorized` {
		t.Errorf("after the second failure: message %q, want the second error", msg)
	}
}
