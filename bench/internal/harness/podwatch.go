package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/zap"
	"google.golang.org/protobuf/types/known/structpb"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/apiauth"
	"github.com/splitlet/splitlet/internal/logctx"
	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

// newPodClient returns a PodService client speaking gRPC over cleartext
// HTTP/2 with the stack's token: one connection multiplexes the watch and
// every concurrent Apply, as splitctl instances sharing a node would not,
// but as a controller would.
func newPodClient(d apiauth.Dial) (podv1connect.PodServiceClient, error) {
	hc, base, err := d.Client(true)
	if err != nil {
		return nil, err
	}
	return podv1connect.NewPodServiceClient(hc, base, connect.WithGRPC()), nil
}

// podObserver marks pods from PodService.Watch: running once every container
// in the pod's status is running, gone on DELETED. It asks for the pods in
// Kubernetes' protobuf encoding: decoding a v1.Pod is a fraction of the cost
// of a Struct, for sync and for the harness, which shares the bench's cores
// with the processes it measures.
type podObserver struct {
	client  podv1connect.PodServiceClient
	running *tracker
	gone    *tracker
	// seen holds every pod a watch event named, so that pods deleted
	// while no watch was open can be told apart (markVanished).
	seen *tracker
}

func newPodObserver(client podv1connect.PodServiceClient) *podObserver {
	return &podObserver{client: client, running: newTracker(), gone: newTracker(), seen: newTracker()}
}

// run watches until ctx ends; subscribed is closed once the first watch has
// its headers (sync sends them before any pod). A watch the server ends
// (the watcher fell behind) is started again: it begins with every current
// pod as ADDED, so a pod that became running meanwhile is marked late,
// never missed.
func (o *podObserver) run(ctx context.Context, subscribed chan<- struct{}) {
	first := true
	for ctx.Err() == nil {
		stream, err := o.client.Watch(ctx, connect.NewRequest(&podv1.WatchRequest{
			Encoding: podv1.WatchEncoding_WATCH_ENCODING_KUBERNETES_PROTOBUF,
		}))
		if err != nil {
			if ctx.Err() == nil {
				logctx.From(ctx).Warn("watch", zap.Error(err))
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		if first {
			first = false
			close(subscribed)
		} else if err := o.markVanished(ctx); err != nil && ctx.Err() == nil {
			logctx.From(ctx).Warn("list after re-watch", zap.Error(err))
		}
		for stream.Receive() {
			if err := o.handle(stream.Msg(), time.Now()); err != nil {
				logctx.From(ctx).Warn("watch event", zap.Error(err))
			}
		}
		if err := stream.Err(); err != nil && ctx.Err() == nil {
			logctx.From(ctx).Info("watch ended; watching again", zap.Error(err))
		}
		stream.Close()
	}
}

// markVanished marks gone every pod seen earlier that is no longer listed:
// a watch sync ended (the watcher fell behind) missed their DELETED events,
// and the new watch starts with the pods that exist. It is called after the
// new watch is open, so a pod listed here is either still there or its
// deletion reaches the new watch.
func (o *podObserver) markVanished(ctx context.Context) error {
	resp, err := o.client.List(ctx, connect.NewRequest(&podv1.ListRequest{}))
	if err != nil {
		return err
	}
	now := time.Now()
	listed := map[string]bool{}
	for _, pod := range resp.Msg.GetPods() {
		listed[field(pod, "metadata", "name").GetStringValue()] = true
	}
	for _, name := range o.seen.names() {
		if !listed[name] {
			o.gone.mark(name, now)
		}
	}
	return nil
}

// handle marks the pod of one watch event. An error means the event's pod
// could not be decoded; the pod is then neither running nor gone, and the
// run's wait names it if no later event is readable.
func (o *podObserver) handle(ev *podv1.WatchResponse, now time.Time) error {
	pod, err := watchedPod(ev)
	if err != nil || pod == nil {
		return err // nil pod: the headers-only first message
	}
	o.seen.mark(pod.Name, now)
	if ev.GetType() == podv1.WatchEventType_WATCH_EVENT_TYPE_DELETED {
		o.gone.mark(pod.Name, now)
		return nil
	}
	if allRunning(pod) {
		o.running.mark(pod.Name, now)
	}
	return nil
}

// watchedPod decodes an event's pod: pod_protobuf as asked for, or the
// Struct from a splitlet-sync older than the encoding choice (it ignores
// the field and sends what it always did), so the harness still measures
// older builds. It returns nil for a message carrying no pod.
func watchedPod(ev *podv1.WatchResponse) (*v1.Pod, error) {
	pod := &v1.Pod{}
	switch {
	case ev.GetPodProtobuf() != nil:
		if err := pod.Unmarshal(ev.GetPodProtobuf()); err != nil {
			return nil, fmt.Errorf("decode pod_protobuf: %w", err)
		}
	case ev.GetPod() != nil:
		raw, err := ev.GetPod().MarshalJSON()
		if err == nil {
			err = json.Unmarshal(raw, pod)
		}
		if err != nil {
			return nil, fmt.Errorf("decode pod Struct: %w", err)
		}
	default:
		return nil, nil
	}
	return pod, nil
}

// allRunning reports whether the pod has a status for every container of
// its spec and each one's state is running.
func allRunning(pod *v1.Pod) bool {
	want := len(pod.Spec.Containers)
	if want == 0 || len(pod.Status.ContainerStatuses) < want {
		return false
	}
	for _, st := range pod.Status.ContainerStatuses {
		if st.State.Running == nil {
			return false
		}
	}
	return true
}

// field walks a Struct by keys (List still answers with Structs); a missing key gives nil, whose getters
// return zero values.
func field(s *structpb.Struct, keys ...string) *structpb.Value {
	var v *structpb.Value
	for _, k := range keys {
		if s == nil {
			return nil
		}
		v = s.GetFields()[k]
		s = v.GetStructValue()
	}
	return v
}
