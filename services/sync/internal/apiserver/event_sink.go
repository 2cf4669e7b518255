package apiserver

import (
	"context"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
)

// EventSource streams recorded events; events.Recorder is one. The stream
// repeats an event under the same name with a higher count.
type EventSource interface {
	Subscribe(ctx context.Context) <-chan v1.Event
}

var _ EventSource = (*events.Recorder)(nil)

// PodLookup finds a pod by UID; podmanager.Manager is one.
type PodLookup interface {
	GetPodByUID(uid types.UID) *v1.Pod
}

var _ PodLookup = (*podmanager.Manager)(nil)

// EventSink writes the events about the API server source's pods to the API
// server; events about pods of other sources stay in splitlet alone (those
// pods do not exist there).
type EventSink struct {
	client kubernetes.Interface
	pods   PodLookup
}

// NewEventSink returns a sink for the pods pods knows.
func NewEventSink(client kubernetes.Interface, pods PodLookup) *EventSink {
	return &EventSink{client: client, pods: pods}
}

// Run writes events from src until ctx ends. Failures are logged, never
// retried: like client-go's broadcaster, an event is best effort.
func (s *EventSink) Run(ctx context.Context, src EventSource) {
	for ev := range src.Subscribe(ctx) {
		if err := s.Write(ctx, &ev); err != nil {
			logctx.From(ctx).Debug("event not written to the API server",
				zap.String("event", ev.Namespace+"/"+ev.Name), zap.Error(err))
		}
	}
}

// Write creates ev, or updates the event of that name when it exists (a
// repeat with a higher count). Matches client-go's recordToSink: create a
// new event, update a correlated one.
func (s *EventSink) Write(ctx context.Context, ev *v1.Event) error {
	p := s.pods.GetPodByUID(ev.InvolvedObject.UID)
	if p == nil || p.Annotations[defaults.ConfigSourceAnnotationKey] != SourceName {
		return nil
	}
	out := ev.DeepCopy()
	out.ResourceVersion = ""
	out.UID = ""
	evs := s.client.CoreV1().Events(ev.Namespace)
	_, err := evs.Create(ctx, out, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, err := evs.Get(ctx, ev.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cur.Count, cur.LastTimestamp, cur.Message = ev.Count, ev.LastTimestamp, ev.Message
	_, err = evs.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}
