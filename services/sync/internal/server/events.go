package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"
	v1 "k8s.io/api/core/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/services/sync/internal/events"
)

// EventLister reads recorded pod events (*events.Recorder).
type EventLister interface {
	List(namespace, name string) []v1.Event
	Subscribe(ctx context.Context) <-chan v1.Event
}

var _ EventLister = (*events.Recorder)(nil)

// Events sends the recorded events of one pod, or of every pod (of a
// namespace), oldest first in one message; with follow, every later event
// (and repeat, with its higher count) follows, one per message.
func (s *Server) Events(ctx context.Context, req *connect.Request[podv1.EventsRequest], stream *connect.ServerStream[podv1.EventsResponse]) error {
	ns, name := req.Msg.GetNamespace(), req.Msg.GetName()
	if name != "" && ns == "" {
		ns = "default"
	}
	var live <-chan v1.Event
	if req.Msg.GetFollow() {
		// Subscribe first so nothing recorded during the listing is lost.
		live = s.events.Subscribe(ctx)
	}
	var list []v1.Event
	if name != "" {
		list = s.events.List(ns, name)
	} else {
		for _, p := range s.pods.GetPodsWithStatus() {
			if ns == "" || p.Namespace == ns {
				list = append(list, s.events.List(p.Namespace, p.Name)...)
			}
		}
		sort.SliceStable(list, func(i, j int) bool { return list[i].LastTimestamp.Before(&list[j].LastTimestamp) })
	}
	resp := &podv1.EventsResponse{}
	for i := range list {
		st, err := eventToStruct(&list[i])
		if err != nil {
			return toConnectError(err)
		}
		resp.Events = append(resp.Events, st)
	}
	// Always send (even empty) so a following client gets its headers.
	if err := stream.Send(resp); err != nil {
		return err
	}
	if live == nil {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-live:
			if !ok {
				return nil
			}
			obj := ev.InvolvedObject
			if (ns != "" && obj.Namespace != ns) || (name != "" && obj.Name != name) {
				continue
			}
			st, err := eventToStruct(&ev)
			if err != nil {
				return toConnectError(err)
			}
			if err := stream.Send(&podv1.EventsResponse{Events: []*structpb.Struct{st}}); err != nil {
				return err
			}
		}
	}
}

// eventToStruct renders a core/v1 Event as the Struct of its JSON.
func eventToStruct(ev *v1.Event) (*structpb.Struct, error) {
	if ev.APIVersion == "" {
		ev = ev.DeepCopy()
		ev.APIVersion, ev.Kind = "v1", "Event"
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	return structpb.NewStruct(m)
}
