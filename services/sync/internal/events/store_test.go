package events

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestStoreBounds(t *testing.T) {
	cases := []struct {
		desc string
		opts Options
		// run records and moves the clock; the recorder is checked after.
		run        func(t *testing.T, r *Recorder, c *fakeClock)
		wantCounts map[string]int // pod name -> events listed
		wantFirst  map[string]string
		wantStats  Stats
	}{
		{
			desc: "per-pod limit evicts the event with the oldest lastTimestamp",
			opts: Options{PerPodLimit: 3},
			run: func(t *testing.T, r *Recorder, c *fakeClock) {
				p := testPod("ns", "a")
				for i := 0; i < 3; i++ {
					r.Eventf(p, v1.EventTypeNormal, CreatedContainer, "m%d", i)
					c.Step(time.Second)
				}
				// m0 repeats, so m1 is now the oldest and goes when m3 arrives.
				r.Eventf(p, v1.EventTypeNormal, CreatedContainer, "m0")
				c.Step(time.Second)
				r.Eventf(p, v1.EventTypeNormal, CreatedContainer, "m3")
			},
			wantCounts: map[string]int{"a": 3},
			wantFirst:  map[string]string{"a": "m2"},
			wantStats:  Stats{Stored: 3, Evicted: 1},
		},
		{
			desc: "total limit takes from the pod holding the most events",
			opts: Options{TotalLimit: 4},
			run: func(t *testing.T, r *Recorder, c *fakeClock) {
				quiet, noisy := testPod("ns", "quiet"), testPod("ns", "noisy")
				r.Eventf(quiet, v1.EventTypeNormal, StartedContainer, "q0")
				c.Step(time.Second)
				for i := 0; i < 5; i++ {
					r.Eventf(noisy, v1.EventTypeWarning, ContainerUnhealthy, "n%d", i)
					c.Step(time.Second)
				}
			},
			wantCounts: map[string]int{"quiet": 1, "noisy": 3},
			wantFirst:  map[string]string{"quiet": "q0", "noisy": "n2"},
			wantStats:  Stats{Stored: 4, Evicted: 2},
		},
		{
			desc: "events expire EventTTL after their last occurrence",
			opts: Options{EventTTL: time.Minute},
			run: func(t *testing.T, r *Recorder, c *fakeClock) {
				p := testPod("ns", "a")
				r.Eventf(p, v1.EventTypeNormal, PullingImage, "old")
				c.Step(50 * time.Second)
				r.Eventf(p, v1.EventTypeNormal, PulledImage, "new")
				c.Step(20 * time.Second) // old is 70s old, new 20s
			},
			wantCounts: map[string]int{"a": 1},
			wantFirst:  map[string]string{"a": "new"},
			wantStats:  Stats{Stored: 1},
		},
		{
			desc: "a forgotten pod is listed until ForgetTTL and then dropped",
			opts: Options{ForgetTTL: time.Minute},
			run: func(t *testing.T, r *Recorder, c *fakeClock) {
				a, b := testPod("ns", "a"), testPod("ns", "b")
				r.Eventf(a, v1.EventTypeNormal, KillingContainer, "Stopping container app")
				r.Eventf(b, v1.EventTypeNormal, StartedContainer, "Started container app")
				r.Forget("ns", "a")
				c.Step(30 * time.Second)
				if n := len(r.List("ns", "a")); n != 1 {
					t.Errorf("forgotten pod listed %d events before ForgetTTL, want 1", n)
				}
				c.Step(31 * time.Second)
			},
			wantCounts: map[string]int{"a": 0, "b": 1},
			wantStats:  Stats{Stored: 1},
		},
		{
			desc: "a new event after Forget keeps the pod",
			opts: Options{ForgetTTL: time.Minute},
			run: func(t *testing.T, r *Recorder, c *fakeClock) {
				a := testPod("ns", "a")
				r.Eventf(a, v1.EventTypeNormal, KillingContainer, "k")
				r.Forget("ns", "a")
				c.Step(30 * time.Second)
				r.Eventf(a, v1.EventTypeNormal, StartedContainer, "s")
				c.Step(time.Hour - 31*time.Second)
			},
			wantCounts: map[string]int{"a": 2},
			wantFirst:  map[string]string{"a": "k"},
			wantStats:  Stats{Stored: 2},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			c := newClock()
			r := newRec(c, tc.opts)
			tc.run(t, r, c)
			for name, n := range tc.wantCounts {
				evs := r.List("ns", name)
				if len(evs) != n {
					t.Errorf("pod %s: %d events, want %d", name, len(evs), n)
					continue
				}
				if m, ok := tc.wantFirst[name]; ok && evs[0].Message != m {
					t.Errorf("pod %s: first event %q, want %q", name, evs[0].Message, m)
				}
			}
			if got := r.Stats(); got != tc.wantStats {
				t.Errorf("stats = %+v, want %+v", got, tc.wantStats)
			}
		})
	}
}

// A full store evicts in one walk down to its low mark (a twentieth under
// TotalLimit), taking from the pods holding the most events, oldest first:
// it never holds more than the limit, never drops below the low mark, and a
// quiet pod keeps its one event while noisy ones give theirs up.
func TestFullStoreEvictsToItsLowMark(t *testing.T) {
	c := newClock()
	r := newRec(c, Options{TotalLimit: 200})
	quiet := testPod("ns", "quiet")
	r.Eventf(quiet, v1.EventTypeNormal, StartedContainer, "quiet")
	c.Step(time.Second)
	filled, evictedToLowMark := false, false
	for i := range 400 {
		// 100 pods, four events each, in rounds: one event per pod per round.
		p := testPod("ns", fmt.Sprintf("noisy-%03d", i%100))
		r.Eventf(p, v1.EventTypeNormal, CreatedContainer, "round %d", i/100)
		c.Step(time.Millisecond)
		total := r.Stats().Stored
		if total > 200 {
			t.Fatalf("event %d: store holds %d, over its limit of 200", i, total)
		}
		if total == 200 {
			filled = true
		}
		if filled && total < 190 {
			t.Fatalf("event %d: store holds %d, under its low mark of 190", i, total)
		}
		evictedToLowMark = evictedToLowMark || (filled && total == 190)
	}
	if !filled || !evictedToLowMark {
		t.Fatalf("the store never filled and went down to its low mark (stats %+v)", r.Stats())
	}
	if evs := r.List("ns", "quiet"); len(evs) != 1 {
		t.Errorf("the quiet pod kept %d events, want its 1", len(evs))
	}
	// Every noisy pod gave up its oldest rounds, never a newer one first.
	for i := range 100 {
		evs := r.List("ns", fmt.Sprintf("noisy-%03d", i))
		if len(evs) == 0 || evs[len(evs)-1].Message != "round 3" {
			t.Fatalf("noisy-%03d lost its newest event: %d left", i, len(evs))
		}
	}
}

// One event into a store kept full by 10,000 pods.
// cd services/sync && go test -run '^$' -bench FullStore ./internal/events/
func BenchmarkRecordIntoFullStore(b *testing.B) {
	c := newClock()
	r := newRec(c, Options{})
	pods := make([]*v1.Pod, 10000)
	for i := range pods {
		pods[i] = testPod("ns", fmt.Sprintf("pod-%05d", i))
		for j := range 2 {
			r.Eventf(pods[i], v1.EventTypeNormal, CreatedContainer, "warm %d", j)
			c.Step(time.Microsecond)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		r.Eventf(pods[i%len(pods)], v1.EventTypeNormal, StartedContainer, "event %d", i)
		c.Step(time.Microsecond)
	}
}
