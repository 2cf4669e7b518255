package fake

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// broker fans container events out to GetContainerEvents subscribers.
//
// Slow subscribers never block the runtime: each has a bounded buffer, and a
// subscriber whose buffer is full when an event is published is dropped —
// its channel is closed and its stream ends with Unavailable. Dropping,
// rather than skipping single events, means a subscriber never sees a
// history with holes in it; like the kubelet's evented PLEG, it relists
// and subscribes again.
type broker struct {
	mu     sync.Mutex
	subs   map[uint64]*subscriber
	nextID uint64
	buf    int
	closed bool
	count  atomic.Int32 // len(subs), read without the lock on the hot path
}

type subscriber struct {
	ch      chan *event
	dropped bool // set before ch is closed for overflow
}

func newBroker(buf int) *broker {
	return &broker{subs: make(map[uint64]*subscriber), buf: buf}
}

func (b *broker) subscribe() (uint64, *subscriber, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, nil, fmt.Errorf("container events: %w: %w", errClosed, errdefs.ErrUnavailable)
	}
	b.nextID++
	s := &subscriber{ch: make(chan *event, b.buf)}
	b.subs[b.nextID] = s
	b.count.Add(1)
	return b.nextID, s, nil
}

func (b *broker) unsubscribe(id uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.subs[id]; ok {
		delete(b.subs, id)
		b.count.Add(-1)
		close(s.ch)
	}
}

// active reports whether anyone listens, so that events nobody receives are
// not built.
func (b *broker) active() bool { return b.count.Load() > 0 }

// publish hands resp to every subscriber without blocking, as one event
// whose wire encoding the subscribers share (see event.send).
func (b *broker) publish(resp *runtimeapi.ContainerEventResponse) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// fanout is set before the event is handed out, so no subscriber reads
	// it while it changes; a subscriber dropped below still counts, which
	// at worst prepares an encoding only one stream uses.
	ev := &event{resp: resp, fanout: len(b.subs)}
	for id, s := range b.subs {
		select {
		case s.ch <- ev:
		default:
			s.dropped = true
			delete(b.subs, id)
			b.count.Add(-1)
			close(s.ch)
		}
	}
}

func (b *broker) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for id, s := range b.subs {
		delete(b.subs, id)
		close(s.ch)
	}
	b.count.Store(0)
}

// emitLocked publishes an event about containerID in sb the way containerd's
// generateAndSendContainerEvent does: with the sandbox's status and the
// statuses of all its containers, taken now. For sandbox events containerID
// is the sandbox ID. The caller holds r.mu.
func (r *Runtime) emitLocked(containerID string, sb *sandbox, typ runtimeapi.ContainerEventType) {
	if !r.events.active() {
		return
	}
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId:        containerID,
		ContainerEventType: typ,
		CreatedAt:          r.now(),
	}
	if sb != nil {
		ev.PodSandboxStatus = r.sandboxStatusLocked(sb)
		ev.ContainersStatuses = r.containerStatusesLocked(sb)
	}
	r.events.publish(ev)
}

// GetContainerEvents streams container and sandbox events to the caller
// until it goes away or the runtime closes. Every subscriber gets every
// event from the moment it subscribed, in the order the state changed.
// Events are shared between subscribers: a caller of this method in the
// same process (not over gRPC) must treat them as read-only. Over gRPC an
// event is marshalled once for all subscribers that share a wire encoding
// (events_wire.go), not once per subscriber.
func (r *Runtime) GetContainerEvents(req *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	ctx := stream.Context()
	if err := r.inject(ctx, "GetContainerEvents"); err != nil {
		return err
	}
	wire := wireEncoding(ctx)
	id, sub, err := r.events.subscribe()
	if err != nil {
		return err
	}
	defer r.events.unsubscribe(id)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-sub.ch:
			if !ok {
				if sub.dropped {
					return fmt.Errorf("container events subscriber fell more than %d events behind and was dropped: %w",
						cap(sub.ch), errdefs.ErrUnavailable)
				}
				// As containerd ends the stream when its queue closes.
				return fmt.Errorf("container events subscription closed by server: %w", errdefs.ErrUnavailable)
			}
			// The event is shared by every subscriber: it is built fresh by
			// emitLocked and never written after publish, and sending only
			// reads it. (A per-subscriber deep copy of the pod's statuses
			// cost more than the send.)
			if err := ev.send(stream, wire); err != nil {
				return err
			}
		}
	}
}
