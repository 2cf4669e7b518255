package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeHandler records the calls; SyncPod blocks on gate when set.
type fakeHandler struct {
	mu         sync.Mutex
	calls      []string
	images     []string
	graces     []*int64
	gate       chan struct{}
	terminal   bool
	termBlocks bool
	// termFails is how many SyncTerminatingPod calls fail before one
	// succeeds (the runtime away).
	termFails  int
	terminated chan struct{}
}

var _ SyncHandler = (*fakeHandler)(nil)

func (f *fakeHandler) SyncPod(ctx context.Context, t UpdateType, pod *v1.Pod) (bool, error) {
	f.mu.Lock()
	f.calls = append(f.calls, "sync:"+t.String())
	f.images = append(f.images, pod.Spec.Containers[0].Image)
	gate, terminal := f.gate, f.terminal
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return terminal, nil
}

func (f *fakeHandler) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, grace *int64) error {
	f.mu.Lock()
	f.calls = append(f.calls, "terminating")
	f.graces = append(f.graces, grace)
	blocks := f.termBlocks
	f.termBlocks = false
	fail := f.termFails > 0
	if fail {
		f.termFails--
	}
	f.mu.Unlock()
	if fail {
		return errors.New("rpc error: code = Unavailable desc = connection refused")
	}
	if blocks {
		<-ctx.Done() // a long grace period, interrupted
		return ctx.Err()
	}
	return nil
}

func (f *fakeHandler) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error {
	f.mu.Lock()
	f.calls = append(f.calls, "terminated")
	f.mu.Unlock()
	close(f.terminated)
	return nil
}

func (f *fakeHandler) snapshot() ([]string, []string, []*int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string{}, f.calls...), append([]string{}, f.images...), append([]*int64{}, f.graces...)
}

func pod(image string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "u1", Name: "p", Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: image}}},
	}
}

func waitClosed(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func int64p(v int64) *int64 { return &v }

// The worker tests run in a synctest bubble: synctest.Wait returns once every
// worker goroutine is blocked (on its wake channel, a gate or a timer), so "the
// worker has done all it will do" is a condition, not a guess; resync periods
// pass on the bubble's fake clock (passResyncPeriods).

// passResyncPeriods moves the bubble's fake clock n periods on, one period at
// a time, and after each returns only once every worker is blocked again
// (synctest.Wait): any timer a worker held has fired and been handled.
func passResyncPeriods(n int, period time.Duration) {
	for range n {
		<-time.After(period)
		synctest.Wait()
	}
}

func TestUpdatesCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		release := make(chan struct{})
		h := &fakeHandler{gate: release, terminated: make(chan struct{})}
		w := New(ctx, h, time.Hour, time.Hour, nil)
		w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: pod("v1")})
		// The first sync is in progress, blocked on the gate: queue two updates.
		synctest.Wait()
		if calls, _, _ := h.snapshot(); len(calls) != 1 {
			t.Fatalf("calls %v, want the first sync in progress", calls)
		}
		w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: pod("v2")})
		w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: pod("v3")})
		h.mu.Lock()
		h.gate = nil
		h.mu.Unlock()
		close(release)
		// Every sync the updates cause has run once the worker is idle again.
		synctest.Wait()
		calls, images, _ := h.snapshot()
		if len(images) != 2 || images[0] != "v1" || images[1] != "v3" {
			t.Errorf("synced images %v (calls %v), want [v1 v3]: v2 replaced by the newer pending v3", images, calls)
		}
		cancel()
		w.Wait()
	})
}

func TestTerminalPodTerminatesOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h := &fakeHandler{terminal: true, terminated: make(chan struct{})}
		w := New(ctx, h, 10*time.Millisecond, 10*time.Millisecond, nil)
		w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodCreate, Pod: pod("v1")})
		waitClosed(t, h.terminated, "terminated")
		// Ten resync periods pass before and after an update: a finished
		// worker must act on neither.
		passResyncPeriods(10, 10*time.Millisecond)
		w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: pod("v2")})
		synctest.Wait()
		passResyncPeriods(10, 10*time.Millisecond)
		calls, _, _ := h.snapshot()
		want := []string{"sync:create", "terminating", "terminated"}
		if len(calls) != len(want) {
			t.Fatalf("calls = %v, want %v (no resync or update after the worker finished)", calls, want)
		}
		for i := range want {
			if calls[i] != want[i] {
				t.Fatalf("calls = %v, want %v", calls, want)
			}
		}
		if !w.IsPodKnownTerminated("u1") || !w.Forget("u1") || w.IsKnown("u1") {
			t.Errorf("finished worker: terminated %v, still known after Forget %v", w.IsPodKnownTerminated("u1"), w.IsKnown("u1"))
		}
		cancel()
		w.Wait()
	})
}

func TestGracePeriodOnlyShrinks(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		first     int64
		second    int64
		wantGrace []int64
	}{
		{desc: "a shorter grace interrupts and restarts the termination", first: 30, second: 1, wantGrace: []int64{30, 1}},
		{desc: "a longer grace is ignored", first: 5, second: 30, wantGrace: []int64{5}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				h := &fakeHandler{termBlocks: true, terminated: make(chan struct{})}
				w := New(ctx, h, time.Hour, time.Hour, nil)
				w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodKill, Pod: pod("v1"),
					KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: int64p(tc.first)}})
				// The termination is under way, blocked on its context.
				synctest.Wait()
				if !w.IsPodTerminationRequested("u1") {
					t.Fatal("kill did not request termination")
				}
				if _, _, graces := h.snapshot(); len(graces) != 1 {
					t.Fatalf("%d terminations started, want 1", len(graces))
				}
				w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodKill, Pod: pod("v1"),
					KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: int64p(tc.second)}})
				if len(tc.wantGrace) == 1 {
					// Whatever the second kill causes has happened once the
					// worker is blocked again; nothing interrupts the
					// blocked termination, so end it.
					synctest.Wait()
					cancel()
					w.Wait()
				} else {
					waitClosed(t, h.terminated, "terminated")
				}
				_, _, graces := h.snapshot()
				var got []int64
				for _, g := range graces {
					got = append(got, *g)
				}
				if len(got) != len(tc.wantGrace) || got[0] != tc.wantGrace[0] || got[len(got)-1] != tc.wantGrace[len(tc.wantGrace)-1] {
					t.Errorf("termination grace periods = %v, want %v", got, tc.wantGrace)
				}
				cancel()
				w.Wait()
			})
		})
	}
}

// A termination that fails (the runtime is away: containerd restarting) is
// retried after the back-off period, as the kubelet's podWorkers.completeWork
// requeues a failed sync; only an interruption by a shorter grace period
// restarts it at once. The chaos suite on containerd found terminating pods
// retried in a busy loop, thousands of times a second, while containerd
// restarted.
func TestFailedTerminationBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		const backoff = 10 * time.Second
		h := &fakeHandler{termFails: 2, terminated: make(chan struct{})}
		w := New(ctx, h, time.Hour, backoff, nil)
		w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodKill, Pod: pod("v1"), KillPodOptions: &KillPodOptions{}})
		for i, want := range []int{1, 2, 3} {
			if i > 0 {
				passResyncPeriods(1, backoff)
			} else {
				synctest.Wait()
			}
			calls, _, _ := h.snapshot()
			got := 0
			for _, c := range calls {
				if c == "terminating" {
					got++
				}
			}
			if got != want {
				t.Fatalf("after %d back-off periods: %d terminations tried (%v), want %d", i, got, calls, want)
			}
		}
		waitClosed(t, h.terminated, "terminated")
		cancel()
		w.Wait()
	})
}

func TestDeletionTimestampStartsTermination(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := &fakeHandler{terminated: make(chan struct{})}
	w := New(ctx, h, time.Hour, time.Hour, nil)
	p := pod("v1")
	now := metav1.Now()
	p.DeletionTimestamp = &now
	p.DeletionGracePeriodSeconds = int64p(7)
	w.UpdatePod(UpdatePodOptions{UpdateType: SyncPodUpdate, Pod: p})
	waitClosed(t, h.terminated, "terminated")
	calls, _, graces := h.snapshot()
	if calls[0] != "terminating" || *graces[0] != 7 {
		t.Errorf("calls %v grace %v, want termination first with the deletion grace 7", calls, *graces[0])
	}
}
