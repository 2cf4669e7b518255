package events

import (
	"container/heap"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
)

// sweepInterval bounds how often the lazy sweep walks the whole store; the
// sweep runs from Record and List, so no goroutine is needed.
const sweepInterval = 10 * time.Second

// entry is one stored event and its correlation key.
type entry struct {
	key string
	ev  v1.Event
}

// podEvents is one pod's events plus the correlator's state for it, so that
// dropping a pod drops everything kept about it.
type podEvents struct {
	entries     []*entry // insertion order
	byKey       map[string]*entry
	aggregates  map[string]*aggregateRecord
	buckets     map[string]*tokenBucket
	forgottenAt time.Time
}

func newPodEvents() *podEvents {
	return &podEvents{
		byKey:      map[string]*entry{},
		aggregates: map[string]*aggregateRecord{},
		buckets:    map[string]*tokenBucket{},
	}
}

func (p *podEvents) add(e *entry) {
	p.entries = append(p.entries, e)
	p.byKey[e.key] = e
}

// oldest returns the index of the entry with the oldest lastTimestamp: the
// one a full ring gives up, since a repeat keeps an old event fresh.
func (p *podEvents) oldest() int {
	idx := 0
	for i, e := range p.entries {
		if e.ev.LastTimestamp.Before(&p.entries[idx].ev.LastTimestamp) {
			idx = i
		}
	}
	return idx
}

func (p *podEvents) removeAt(i int) {
	e := p.entries[i]
	// A later identical event starts a new one with count 1, as after an
	// LRU eviction in client-go's eventLogger.
	if p.byKey[e.key] == e {
		delete(p.byKey, e.key)
	}
	p.entries = append(p.entries[:i], p.entries[i+1:]...)
}

// enforceLimitsLocked applies PerPodLimit to pe and then TotalLimit to the
// store. Over the total, the pod holding the most events gives up its oldest,
// so one crash-looping pod cannot push every other pod's history out; ties
// go to the pod whose oldest event is oldest. Choosing walks every pod, so
// once over the total the store evicts down to its low mark (a twentieth
// under the total) in that one walk, and the next events up to the total
// need none: a store kept full by 10,000 pods walked them for every event,
// a quarter of sync's CPU in a 10,000-pod burst.
func (r *Recorder) enforceLimitsLocked(pe *podEvents) {
	for len(pe.entries) > r.opts.PerPodLimit {
		pe.removeAt(pe.oldest())
		r.total--
		r.stats.Evicted++
	}
	if r.total <= r.opts.TotalLimit {
		return
	}
	low := r.opts.TotalLimit - r.opts.TotalLimit/20
	h := make(victims, 0, len(r.pods))
	for _, p := range r.pods {
		if len(p.entries) > 0 {
			h = append(h, victim{p: p, oldest: p.oldest()})
		}
	}
	heap.Init(&h)
	for r.total > low && len(h) > 0 {
		v := &h[0]
		v.p.removeAt(v.oldest)
		r.total--
		r.stats.Evicted++
		if len(v.p.entries) == 0 {
			heap.Pop(&h)
			continue
		}
		v.oldest = v.p.oldest()
		heap.Fix(&h, 0)
	}
}

// victim is a pod that may give up an event, with the index of its oldest.
type victim struct {
	p      *podEvents
	oldest int
}

// victims is a heap whose top is the next pod to give up an event: the most
// events, then the oldest oldest event.
type victims []victim

func (h victims) Len() int { return len(h) }
func (h victims) Less(i, j int) bool {
	a, b := h[i], h[j]
	if len(a.p.entries) != len(b.p.entries) {
		return len(a.p.entries) > len(b.p.entries)
	}
	return a.p.entries[a.oldest].ev.LastTimestamp.Before(&b.p.entries[b.oldest].ev.LastTimestamp)
}
func (h victims) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *victims) Push(x any)   { *h = append(*h, x.(victim)) }
func (h *victims) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// List returns the events about the pod namespace/name, oldest lastTimestamp
// first (then firstTimestamp, then name), as `kubectl describe` orders them.
// The result is a copy; a forgotten pod's events are listed until ForgetTTL.
func (r *Recorder) List(namespace, name string) []v1.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.maybeSweepLocked(r.opts.Now())
	pe := r.pods[podKey{namespace, name}]
	if pe == nil {
		return nil
	}
	out := make([]v1.Event, 0, len(pe.entries))
	for _, e := range pe.entries {
		out = append(out, *e.ev.DeepCopy())
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.LastTimestamp.Equal(&b.LastTimestamp) {
			return a.LastTimestamp.Before(&b.LastTimestamp)
		}
		if !a.FirstTimestamp.Equal(&b.FirstTimestamp) {
			return a.FirstTimestamp.Before(&b.FirstTimestamp)
		}
		return a.Name < b.Name
	})
	return out
}

// Forget marks the pod namespace/name as gone (deleted from the pod
// manager). Its events stay listable for ForgetTTL, so a `describe` right
// after deletion still explains what happened, and are dropped after that
// together with the correlator's state. A new event about the pod before
// then cancels the Forget.
func (r *Recorder) Forget(namespace, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pe := r.pods[podKey{namespace, name}]; pe != nil {
		pe.forgottenAt = r.opts.Now()
	}
}

// Sweep drops expired events and forgotten pods now. Record and List sweep
// lazily every few seconds, so callers need not; it exists for a periodic
// housekeeping loop and for tests.
func (r *Recorder) Sweep() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(r.opts.Now())
}

func (r *Recorder) maybeSweepLocked(now time.Time) {
	if now.Sub(r.lastSweep) >= sweepInterval {
		r.sweepLocked(now)
	}
}

func (r *Recorder) sweepLocked(now time.Time) {
	r.lastSweep = now
	for k, pe := range r.pods {
		if !pe.forgottenAt.IsZero() && now.Sub(pe.forgottenAt) >= r.opts.ForgetTTL {
			r.total -= len(pe.entries)
			delete(r.pods, k)
			continue
		}
		for i := 0; i < len(pe.entries); {
			if now.Sub(pe.entries[i].ev.LastTimestamp.Time) > r.opts.EventTTL {
				pe.removeAt(i)
				r.total--
				continue
			}
			i++
		}
		// An idle pod with nothing left to show costs only its correlator
		// state; drop it so the map does not grow with every pod ever seen.
		if len(pe.entries) == 0 {
			delete(r.pods, k)
		}
	}
}
