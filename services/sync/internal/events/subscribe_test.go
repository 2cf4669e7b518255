package events

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func recv(t *testing.T, ch <-chan v1.Event) v1.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("channel closed early")
		}
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event delivered")
	}
	return v1.Event{}
}

func TestSubscribeFanOut(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newClock()
	r := newRec(c, Options{})
	a, b := r.Subscribe(ctx), r.Subscribe(ctx)
	pod := testPod("ns", "web")
	r.Eventf(pod, v1.EventTypeNormal, PullingImage, "Pulling image %q", "busybox")
	c.Step(time.Second)
	r.Eventf(pod, v1.EventTypeNormal, PullingImage, "Pulling image %q", "busybox")

	for _, ch := range []<-chan v1.Event{a, b} {
		first, second := recv(t, ch), recv(t, ch)
		if first.Count != 1 || second.Count != 2 || first.Name != second.Name {
			t.Errorf("got %s x%d then %s x%d, want one event x1 then x2", first.Name, first.Count, second.Name, second.Count)
		}
	}
}

func TestSlowSubscriberLosesNewest(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := newClock()
	r := newRec(c, Options{SubscriberBuffer: 2})
	slow := r.Subscribe(ctx)
	fast := r.Subscribe(ctx)
	pod := testPod("ns", "web")

	for _, m := range []string{"m0", "m1", "m2", "m3"} {
		r.Event(pod, v1.EventTypeNormal, CreatedContainer, m)
		c.Step(time.Second)
		// The reading subscriber gets every event although the other one
		// stopped reading: delivery to one does not wait for another.
		if e := recv(t, fast); e.Message != m {
			t.Errorf("fast subscriber got %q, want %q", e.Message, m)
		}
	}
	if e := recv(t, slow); e.Message != "m0" {
		t.Errorf("slow subscriber first event %q, want m0", e.Message)
	}
	if e := recv(t, slow); e.Message != "m1" {
		t.Errorf("slow subscriber second event %q, want m1", e.Message)
	}
	if d := r.Stats().SubscriberDrops; d != 2 {
		t.Errorf("SubscriberDrops = %d, want 2 (m2, m3 for the slow subscriber)", d)
	}
	cancel()
	// Closed after cancel, with nothing else buffered.
	select {
	case e, ok := <-slow:
		if ok {
			t.Errorf("slow subscriber got %q after its buffer drained, want closed", e.Message)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("slow subscriber's channel not closed after cancel")
	}
}
