package server

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
)

// watchBuffer is how far a watcher may fall behind before its stream is
// ended (it should re-watch, which starts with the current pods).
const watchBuffer = 1024

// MaxWatchers bounds the Watch streams open at once, all clients together:
// each holds a goroutine and up to watchBuffer events. One more is refused
// with ResourceExhausted rather than grow sync without limit.
const MaxWatchers = 1000

// Watch sends the current pods as ADDED, then every change, each pod in the
// encoding the watcher asked for (watch_encoding.go).
func (s *Server) Watch(ctx context.Context, req *connect.Request[podv1.WatchRequest], stream *connect.ServerStream[podv1.WatchResponse]) error {
	enc, err := newWatchEncoder(req.Msg.GetEncoding())
	if err != nil {
		return toConnectError(err)
	}
	match, err := podFilter(req.Msg.GetNamespace(), req.Msg.GetName(), req.Msg.GetLabelSelector())
	if err != nil {
		return toConnectError(err)
	}
	if n := s.watchers.Add(1); n > s.maxWatchers {
		s.watchers.Add(-1)
		return toConnectError(fmt.Errorf("%d watches are open, the most sync serves at once; close one: %w", s.maxWatchers, errdefs.ErrResourceExhausted))
	}
	defer s.watchers.Add(-1)
	// Subscribe before listing, so no change between the two is lost (a
	// change may then be seen twice, which watchers tolerate).
	events, cancel := s.pods.Subscribe(watchBuffer)
	defer cancel()
	// Send the headers now: Connect clients return from the call only once
	// they have them, and there may be no pod to send for a long time.
	if err := stream.Send(nil); err != nil {
		return err
	}
	for _, pod := range s.pods.GetPodsWithStatus() {
		if !match(pod) {
			continue
		}
		resp, err := enc.encode(podv1.WatchEventType_WATCH_EVENT_TYPE_ADDED, pod)
		if err != nil {
			return toConnectError(err)
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return toConnectError(fmt.Errorf("watcher fell behind, watch again: %w", errdefs.ErrUnavailable))
			}
			if !match(ev.Pod) {
				continue
			}
			typ := podv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED
			switch ev.Type {
			case podmanager.Added:
				typ = podv1.WatchEventType_WATCH_EVENT_TYPE_ADDED
			case podmanager.Deleted:
				typ = podv1.WatchEventType_WATCH_EVENT_TYPE_DELETED
			}
			resp, err := enc.encode(typ, ev.Pod)
			if err != nil {
				return toConnectError(err)
			}
			if err := stream.Send(resp); err != nil {
				return err
			}
		}
	}
}
