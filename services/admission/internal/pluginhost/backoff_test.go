package pluginhost

import (
	"testing"
	"time"
)

func TestRestartBackoff(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		at       time.Duration // when a start is wanted
		wantWait time.Duration // what wait() says then; <= 0 means start now
	}
	tests := []struct {
		desc  string
		steps []step
	}{
		{desc: "first start is immediate", steps: []step{{0, 0}}},
		{desc: "first restart after a crash is immediate", steps: []step{{0, 0}, {5 * time.Second, 0}}},
		{desc: "crash loop doubles the wait up to max", steps: []step{
			{0, 0},                             // initial start
			{0, 0},                             // first restart: immediate
			{0, time.Second},                   // then 1s
			{time.Second, 0},                   // start at 1s
			{time.Second, 2 * time.Second},     // then 2s
			{3 * time.Second, 0},               // start at 3s
			{3 * time.Second, 4 * time.Second}, // then 4s
			{7 * time.Second, 0},               // start at 7s
			{7 * time.Second, 4 * time.Second}, // capped at max (4s)
		}},
		{desc: "quiet period resets the back-off", steps: []step{
			{0, 0}, {0, 0}, {0, time.Second}, {time.Second, 0}, {time.Second, 2 * time.Second},
			{9 * time.Second, 0},           // 8s >= 2*max since the last start: healthy again
			{9 * time.Second, time.Second}, // counted as the first restart of a new loop
		}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			b := restartBackoff{initial: time.Second, max: 4 * time.Second}
			for i, s := range tc.steps {
				got := b.wait(at(s.at))
				if got <= 0 {
					got = 0
				}
				if got != s.wantWait {
					t.Fatalf("step %d at %s: wait = %s, want %s", i, s.at, got, s.wantWait)
				}
				if got == 0 {
					b.started(at(s.at))
				}
			}
		})
	}
}
