package events

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

type subscriber struct {
	ch chan v1.Event
}

// Subscribe returns a channel receiving every event the recorder stores from
// now on, new ones and repeats (a repeat arrives again with its higher count
// and later lastTimestamp, like a watch's MODIFIED). The channel is closed
// when ctx is done.
//
// Delivery never blocks the recorder: each subscriber has a buffer of
// SubscriberBuffer events, and an event that finds the buffer full is dropped
// for that subscriber only (counted in Stats.SubscriberDrops). A slow
// subscriber therefore loses the newest events while it lags, never older
// ones it has not read yet; one that needs a complete view should List again
// after catching up.
func (r *Recorder) Subscribe(ctx context.Context) <-chan v1.Event {
	s := &subscriber{ch: make(chan v1.Event, r.opts.SubscriberBuffer)}
	r.mu.Lock()
	r.subs[s] = struct{}{}
	r.mu.Unlock()
	go func() {
		<-ctx.Done()
		r.mu.Lock()
		delete(r.subs, s)
		// Closed under r.mu: publishLocked holds it too, so no send can race
		// the close.
		close(s.ch)
		r.mu.Unlock()
	}()
	return s.ch
}

// publishLocked offers ev to every subscriber without blocking. r.mu is held.
func (r *Recorder) publishLocked(ev v1.Event) {
	for s := range r.subs {
		select {
		case s.ch <- *ev.DeepCopy():
		default:
			r.stats.SubscriberDrops++
		}
	}
}
