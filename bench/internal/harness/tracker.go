package harness

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// tracker records the first time each pod was seen in one state (running,
// gone). Observers mark; the run waits until every pod it cares about is
// marked.
type tracker struct {
	mu      sync.Mutex
	at      map[string]time.Time
	waiters map[*waiter]struct{}
}

// waiter is one wait call: the names it still needs, and a channel closed
// when there are none left.
type waiter struct {
	left map[string]struct{}
	done chan struct{}
}

func newTracker() *tracker { return &tracker{at: make(map[string]time.Time)} }

// mark records now for name unless it was already marked: the first
// observation is the one that counts.
func (t *tracker) mark(name string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.at[name]; ok {
		return
	}
	t.at[name] = now
	for w := range t.waiters {
		if _, ok := w.left[name]; ok {
			delete(w.left, name)
			if len(w.left) == 0 {
				close(w.done)
				delete(t.waiters, w)
			}
		}
	}
}

func (t *tracker) get(name string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.at[name]
	return at, ok
}

// names returns every marked name.
func (t *tracker) names() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.at))
	for name := range t.at {
		out = append(out, name)
	}
	return out
}

// count returns how many of names are marked.
func (t *tracker) count(names []string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, name := range names {
		if _, ok := t.at[name]; ok {
			n++
		}
	}
	return n
}

// unmarked returns up to limit of names that are not marked.
func (t *tracker) unmarked(names []string, limit int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, name := range names {
		if _, ok := t.at[name]; !ok && len(out) < limit {
			out = append(out, name)
		}
	}
	return out
}

// wait returns once every name is marked, or when ctx ends. Marks signal
// it: the bench shares its two cores with the processes it measures, and
// polling thousands of names every few milliseconds took a visible part of
// them.
func (t *tracker) wait(ctx context.Context, names []string) error {
	t.mu.Lock()
	w := &waiter{left: make(map[string]struct{}), done: make(chan struct{})}
	for _, name := range names {
		if _, ok := t.at[name]; !ok {
			w.left[name] = struct{}{}
		}
	}
	if len(w.left) == 0 {
		t.mu.Unlock()
		return nil
	}
	if t.waiters == nil {
		t.waiters = make(map[*waiter]struct{})
	}
	t.waiters[w] = struct{}{}
	t.mu.Unlock()

	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		t.mu.Lock()
		delete(t.waiters, w)
		t.mu.Unlock()
		n := t.count(names)
		if n == len(names) {
			return nil
		}
		return fmt.Errorf("%d of %d pods (not: %s): %w", n, len(names), strings.Join(t.unmarked(names, 5), " "), ctx.Err())
	}
}

// durations returns, for each name marked in t, its time minus its start,
// and how many names were not marked.
func durations(names []string, start map[string]time.Time, t *tracker) ([]time.Duration, int) {
	out := make([]time.Duration, 0, len(names))
	missing := 0
	for _, name := range names {
		at, ok := t.get(name)
		s, started := start[name]
		if !ok || !started {
			missing++
			continue
		}
		out = append(out, at.Sub(s))
	}
	return out, missing
}

// latest returns the latest mark among names.
func latest(names []string, t *tracker) time.Time {
	var last time.Time
	for _, name := range names {
		if at, ok := t.get(name); ok && at.After(last) {
			last = at
		}
	}
	return last
}
