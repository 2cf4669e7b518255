package events

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/splitlet/splitlet/internal/logctx"
)

// SourceComponent is the source.component (and reportingController) of every
// event splitlet records, where the kubelet writes "kubelet".
const SourceComponent = "splitlet"

// EventRecorder is what the pod workers, the probe manager and the hooks
// runner need to record events. *Recorder implements it; FakeRecorder is the
// hand-written fake for their tests. Recording never fails from the caller's
// point of view: a dropped event is logged and counted, never returned.
type EventRecorder interface {
	// Event records an event about pod with a literal message.
	Event(pod *v1.Pod, eventtype, reason, message string)
	// Eventf records an event about pod with a formatted message.
	Eventf(pod *v1.Pod, eventtype, reason, messageFmt string, args ...any)
	// EventfContainer records an event about one container of pod; the event's
	// involvedObject.fieldPath names the container (spec.containers{name},
	// spec.initContainers{name} or spec.ephemeralContainers{name}).
	EventfContainer(pod *v1.Pod, container, eventtype, reason, messageFmt string, args ...any)
}

var _ EventRecorder = (*Recorder)(nil)

// Options configures a Recorder. Zero fields take the defaults in brackets.
type Options struct {
	// NodeName is the events' source.host and reportingInstance.
	NodeName string
	// Now is the clock [time.Now]; tests pass a fake one.
	Now func() time.Time

	// PerPodLimit caps the events kept for one pod [100].
	PerPodLimit int
	// TotalLimit caps the events kept for all pods [10000].
	TotalLimit int
	// EventTTL drops an event this long after its last occurrence [1h, the
	// API server's default --event-ttl].
	EventTTL time.Duration
	// ForgetTTL is how long a forgotten pod's events stay listable [5m].
	ForgetTTL time.Duration
	// SubscriberBuffer is each subscriber's channel capacity [256].
	SubscriberBuffer int

	// SpamBurst and SpamQPS are the per pod and event type token bucket
	// [25 events, refilled at 1/300 per second], client-go's defaults.
	SpamBurst int
	SpamQPS   float64
	// AggregateMaxEvents distinct messages with one reason within
	// AggregateInterval fold into one combined event [10 in 10m], as
	// client-go's EventAggregator.
	AggregateMaxEvents int
	AggregateInterval  time.Duration
}

func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PerPodLimit <= 0 {
		o.PerPodLimit = 100
	}
	if o.TotalLimit <= 0 {
		o.TotalLimit = 10000
	}
	if o.EventTTL <= 0 {
		o.EventTTL = time.Hour
	}
	if o.ForgetTTL <= 0 {
		o.ForgetTTL = 5 * time.Minute
	}
	if o.SubscriberBuffer <= 0 {
		o.SubscriberBuffer = 256
	}
	if o.SpamBurst <= 0 {
		o.SpamBurst = 25
	}
	if o.SpamQPS <= 0 {
		o.SpamQPS = 1.0 / 300.0
	}
	if o.AggregateMaxEvents <= 0 {
		o.AggregateMaxEvents = 10
	}
	if o.AggregateInterval <= 0 {
		o.AggregateInterval = 10 * time.Minute
	}
	return o
}

// Stats counts what the recorder did not keep or deliver, for metrics.
type Stats struct {
	// Stored is the number of events held now.
	Stored int
	// Filtered counts events dropped by the spam filter.
	Filtered uint64
	// Evicted counts stored events pushed out by PerPodLimit or TotalLimit.
	Evicted uint64
	// SubscriberDrops counts deliveries lost because a subscriber's buffer
	// was full.
	SubscriberDrops uint64
}

// Recorder records, correlates, stores and fans out pod events. It is safe
// for concurrent use; every method is cheap and never blocks on subscribers.
type Recorder struct {
	opts Options
	log  *zap.Logger

	mu        sync.Mutex
	pods      map[podKey]*podEvents
	total     int
	lastNano  int64
	lastSweep time.Time
	subs      map[*subscriber]struct{}
	stats     Stats
}

// New returns a Recorder; it logs through the zap logger carried in ctx.
func New(ctx context.Context, opts Options) *Recorder {
	opts = opts.withDefaults()
	return &Recorder{
		opts:      opts,
		log:       logctx.From(ctx).Named("events"),
		pods:      map[podKey]*podEvents{},
		subs:      map[*subscriber]struct{}{},
		lastSweep: opts.Now(),
	}
}

// Event implements EventRecorder.
func (r *Recorder) Event(pod *v1.Pod, eventtype, reason, message string) {
	r.record(pod, "", eventtype, reason, message)
}

// Eventf implements EventRecorder.
func (r *Recorder) Eventf(pod *v1.Pod, eventtype, reason, messageFmt string, args ...any) {
	r.record(pod, "", eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// EventfContainer implements EventRecorder.
func (r *Recorder) EventfContainer(pod *v1.Pod, container, eventtype, reason, messageFmt string, args ...any) {
	r.record(pod, containerFieldPath(pod, container), eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// Stats returns the recorder's counters.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Stored = r.total
	return s
}

// containerFieldPath locates container in pod the way the kubelet's
// container.GenerateContainerRef does, so `kubectl describe` groups the
// event under the right container.
func containerFieldPath(pod *v1.Pod, container string) string {
	if pod != nil {
		for _, c := range pod.Spec.InitContainers {
			if c.Name == container {
				return fmt.Sprintf("spec.initContainers{%s}", container)
			}
		}
		for _, c := range pod.Spec.EphemeralContainers {
			if c.Name == container {
				return fmt.Sprintf("spec.ephemeralContainers{%s}", container)
			}
		}
	}
	// Regular containers, and a name not (or no longer) in the spec: the
	// event is still about a container, which is what the path says.
	return fmt.Sprintf("spec.containers{%s}", container)
}

// record builds the event like client-go's recorder.makeEvent and hands it
// to the correlator and the store.
func (r *Recorder) record(pod *v1.Pod, fieldPath, eventtype, reason, message string) {
	if pod == nil {
		r.log.Error("dropping event about a nil pod", zap.String("reason", reason), zap.String("message", message))
		return
	}
	// client-go refuses types other than Normal and Warning
	// (util.ValidateEventType); so do we.
	if eventtype != v1.EventTypeNormal && eventtype != v1.EventTypeWarning {
		r.log.Error("dropping event with unsupported type", zap.String("type", eventtype),
			zap.String("pod", pod.Namespace+"/"+pod.Name), zap.String("reason", reason))
		return
	}
	ev := v1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace},
		InvolvedObject: v1.ObjectReference{
			Kind:       "Pod",
			APIVersion: "v1",
			Namespace:  pod.Namespace,
			Name:       pod.Name,
			UID:        pod.UID,
			FieldPath:  fieldPath,
		},
		Reason:              reason,
		Message:             message,
		Type:                eventtype,
		Source:              v1.EventSource{Component: SourceComponent, Host: r.opts.NodeName},
		ReportingController: SourceComponent,
		ReportingInstance:   r.opts.NodeName,
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observeLocked(ev)
}

// eventNameLocked is client-go's util.GenerateEventName (`<object>.<hex nanos>`),
// made strictly increasing so two events in one clock tick keep unique names.
func (r *Recorder) eventNameLocked(pod string, now time.Time) string {
	n := now.UnixNano()
	if n <= r.lastNano {
		n = r.lastNano + 1
	}
	r.lastNano = n
	return fmt.Sprintf("%s.%x", pod, n)
}

// podKey identifies a pod's events by namespace and name, as List asks for
// them; the UID is kept in each event's involvedObject.
type podKey struct{ namespace, name string }

func keyOf(ev *v1.Event) podKey {
	return podKey{ev.InvolvedObject.Namespace, ev.InvolvedObject.Name}
}

func joinKey(parts ...string) string { return strings.Join(parts, "\x00") }
