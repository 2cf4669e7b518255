package events

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// combinedPrefix is client-go's EventAggregatorByReasonMessageFunc prefix.
const combinedPrefix = "(combined from similar events): "

// eventKey is client-go's getEventKey: events equal in every field but time
// are one event with a count. (A NUL separator instead of client-go's empty
// one keeps "ab"+"c" and "a"+"bc" apart.)
func eventKey(ev *v1.Event) string {
	return joinKey(ev.Source.Component, ev.Source.Host,
		ev.InvolvedObject.Kind, ev.InvolvedObject.Namespace, ev.InvolvedObject.Name,
		ev.InvolvedObject.FieldPath, string(ev.InvolvedObject.UID), ev.InvolvedObject.APIVersion,
		ev.Type, ev.Reason, ev.Message)
}

// aggregateKey is client-go's EventAggregatorByReasonFunc: events differing
// only in message (and container) are "similar".
func aggregateKey(ev *v1.Event) string {
	return joinKey(ev.Source.Component, ev.Source.Host,
		ev.InvolvedObject.Kind, ev.InvolvedObject.Namespace, ev.InvolvedObject.Name,
		string(ev.InvolvedObject.UID), ev.InvolvedObject.APIVersion,
		ev.Type, ev.Reason, ev.ReportingController, ev.ReportingInstance)
}

// spamKey is client-go's getSpamKey: one rate limit per object and type.
func spamKey(ev *v1.Event) string {
	return joinKey(ev.Source.Component, ev.Source.Host,
		ev.InvolvedObject.Kind, ev.InvolvedObject.Namespace, ev.InvolvedObject.Name,
		string(ev.InvolvedObject.UID), ev.InvolvedObject.APIVersion, ev.Type)
}

// aggregateRecord is client-go's aggregateRecord: the distinct messages seen
// for one aggregate key and when the last one came.
type aggregateRecord struct {
	messages map[string]struct{}
	last     time.Time
}

// tokenBucket is the spam filter's per-key limiter, like
// flowcontrol.NewTokenBucketRateLimiterWithClock used with TryAccept.
type tokenBucket struct {
	tokens float64
	last   time.Time
}

func (b *tokenBucket) tryAccept(now time.Time, burst int, qps float64) bool {
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens += elapsed.Seconds() * qps
	}
	if b.tokens > float64(burst) {
		b.tokens = float64(burst)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// observeLocked runs ev through the correlator in client-go's order
// (EventCorrelator.EventCorrelate: aggregate, observe, filter) and stores
// and publishes what survives. r.mu is held.
func (r *Recorder) observeLocked(ev v1.Event) {
	now := r.opts.Now()
	r.maybeSweepLocked(now)

	pk := keyOf(&ev)
	pe := r.pods[pk]
	if pe == nil {
		pe = newPodEvents()
		r.pods[pk] = pe
	}
	// A pod that records again after Forget is alive again (recreated with
	// the same name): keep its events.
	pe.forgottenAt = time.Time{}

	// Aggregate (EventAggregator.EventAggregate).
	key := eventKey(&ev)
	aggKey := aggregateKey(&ev)
	agg := pe.aggregates[aggKey]
	if agg == nil || now.Sub(agg.last) > r.opts.AggregateInterval {
		agg = &aggregateRecord{messages: map[string]struct{}{}}
		pe.aggregates[aggKey] = agg
	}
	agg.messages[ev.Message] = struct{}{}
	agg.last = now
	if len(agg.messages) >= r.opts.AggregateMaxEvents {
		// Keep the set from growing past the threshold, as client-go's
		// localKeys.PopAny; which one goes does not matter.
		for m := range agg.messages {
			delete(agg.messages, m)
			break
		}
		ev.Message = combinedPrefix + ev.Message
		key = aggKey
	}

	// Filter (EventSourceObjectSpamFilter.Filter). Every occurrence spends a
	// token, a repeat as much as a new event, as in client-go.
	sk := spamKey(&ev)
	bucket := pe.buckets[sk]
	if bucket == nil {
		bucket = &tokenBucket{tokens: float64(r.opts.SpamBurst), last: now}
		pe.buckets[sk] = bucket
	}
	if !bucket.tryAccept(now, r.opts.SpamBurst, r.opts.SpamQPS) {
		r.stats.Filtered++
		return
	}

	// Observe (eventLogger.eventObserve): a repeat bumps count and
	// lastTimestamp of the stored event and keeps its name and first time.
	if e := pe.byKey[key]; e != nil {
		e.ev.Count++
		e.ev.LastTimestamp = metav1.NewTime(now)
		e.ev.Message = ev.Message
		r.publishLocked(e.ev)
		return
	}
	ev.Name = r.eventNameLocked(ev.InvolvedObject.Name, now)
	ev.Count = 1
	ev.FirstTimestamp = metav1.NewTime(now)
	ev.LastTimestamp = ev.FirstTimestamp
	e := &entry{key: key, ev: ev}
	pe.add(e)
	r.total++
	r.enforceLimitsLocked(pe)
	r.publishLocked(e.ev)
}
