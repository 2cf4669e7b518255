package events

import (
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
// so one crash-looping pod cannot push every other pod's history out.
func (r *Recorder) enforceLimitsLocked(pe *podEvents) {
	for len(pe.entries) > r.opts.PerPodLimit {
		pe.removeAt(pe.oldest())
		r.total--
		r.stats.Evicted++
	}
	for r.total > r.opts.TotalLimit {
		var victim *podEvents
		for _, p := range r.pods {
			if len(p.entries) == 0 {
				continue
			}
			if victim == nil || len(p.entries) > len(victim.entries) ||
				(len(p.entries) == len(victim.entries) &&
					p.entries[p.oldest()].ev.LastTimestamp.Before(&victim.entries[victim.oldest()].ev.LastTimestamp)) {
				victim = p
			}
		}
		if victim == nil {
			return
		}
		victim.removeAt(victim.oldest())
		r.total--
		r.stats.Evicted++
	}
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
