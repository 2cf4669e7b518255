package apiserver

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/events"
)

// NodeEventRecorder records an event about the node itself (the kubelet's
// recorder.Eventf(kl.nodeRef, ...)).
type NodeEventRecorder interface {
	Event(eventType, reason, message string)
}

// Node event reasons, the kubelet's (pkg/kubelet/events and the node
// status setters).
const (
	NodeStarting                      = "Starting"
	NodeReadyEvent                    = "NodeReady"
	NodeNotReadyEvent                 = "NodeNotReady"
	NodeRebooted                      = "Rebooted"
	NodeCgroupV1                      = "CgroupV1"
	PossibleMemoryBackedVolumesOnDisk = "PossibleMemoryBackedVolumesOnDisk"
)

// Limits of the node event writer: client-go's broadcaster queue
// (maxQueuedEvents), and recordToSink's tries and the sleep between them.
const (
	nodeEventQueue   = 1000
	nodeEventTries   = 12
	nodeEventBackoff = 10 * time.Second
)

// NodeEvents writes events about the node to the API server, as the
// kubelet's event broadcaster does for its nodeRef: each event is queued
// (dropped when the queue is full, never blocking the caller) and created
// by Run, retried up to 12 times 10 s apart while the API server cannot
// be reached. Events queued before Run starts wait for it.
type NodeEvents struct {
	client kubernetes.Interface
	node   string
	now    func() time.Time
	queue  chan *v1.Event
	// retry is the wait between tries (tests shorten it).
	retry time.Duration
}

var _ NodeEventRecorder = (*NodeEvents)(nil)

// NewNodeEvents returns a writer of events about node.
func NewNodeEvents(client kubernetes.Interface, node string) *NodeEvents {
	return &NodeEvents{client: client, node: node, now: time.Now, queue: make(chan *v1.Event, nodeEventQueue), retry: nodeEventBackoff}
}

// Event queues an event about the node. Its object reference is the
// kubelet's nodeRef (kind Node, the node's name as name and UID); like
// client-go's makeEvent it lives in the default namespace and is named
// <node>.<nanoseconds in hex>.
func (e *NodeEvents) Event(eventType, reason, message string) {
	t := metav1.NewTime(e.now())
	ev := &v1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", e.node, t.UnixNano()), Namespace: metav1.NamespaceDefault},
		InvolvedObject: v1.ObjectReference{
			Kind: "Node", Name: e.node, UID: types.UID(e.node),
		},
		Reason:              reason,
		Message:             message,
		Source:              v1.EventSource{Component: events.SourceComponent, Host: e.node},
		FirstTimestamp:      t,
		LastTimestamp:       t,
		Count:               1,
		Type:                eventType,
		ReportingController: events.SourceComponent,
		ReportingInstance:   e.node,
	}
	select {
	case e.queue <- ev:
	default:
	}
}

// Run writes queued events until ctx ends.
func (e *NodeEvents) Run(ctx context.Context) {
	log := logctx.From(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-e.queue:
			if err := e.write(ctx, ev); err != nil {
				log.Info("node event not written to the API server", zap.String("reason", ev.Reason), zap.Error(err))
			}
		}
	}
}

// write creates ev, trying again while the API server fails, as
// client-go's recordToSink: an event the server refuses as invalid, or
// already has, is not retried.
func (e *NodeEvents) write(ctx context.Context, ev *v1.Event) error {
	var err error
	for try := 1; try <= nodeEventTries; try++ {
		_, err = e.client.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(e.retry):
		}
	}
	return err
}

// nodeStatusEvent is the message of the kubelet's recordNodeStatusEvent.
func nodeStatusEvent(node, event string) string {
	return fmt.Sprintf("Node %s status is now: %s", node, event)
}

// pressureEvents name the events of a pressure condition turning False
// and True, the kubelet's MemoryPressureCondition, DiskPressureCondition
// and PIDPressureCondition setters.
var pressureEvents = map[v1.NodeConditionType][2]string{
	v1.NodeMemoryPressure: {"NodeHasSufficientMemory", "NodeHasInsufficientMemory"},
	v1.NodeDiskPressure:   {"NodeHasNoDiskPressure", "NodeHasDiskPressure"},
	v1.NodePIDPressure:    {"NodeHasSufficientPID", "NodeHasInsufficientPID"},
}

// conditionEvents returns the status events the kubelet's setters record
// when a node's conditions go from prev to cur: a pressure condition that
// is new or changed its status, and a Ready condition that changed its
// status (a new one records nothing, as in the kubelet's ReadyCondition).
func conditionEvents(prev, cur []v1.NodeCondition) []string {
	var out []string
	for _, c := range cur {
		p := findCondition(prev, c.Type)
		if c.Type == v1.NodeReady {
			if p == nil || p.Status == c.Status {
				continue
			}
			if c.Status == v1.ConditionTrue {
				out = append(out, NodeReadyEvent)
			} else {
				out = append(out, NodeNotReadyEvent)
			}
			continue
		}
		names, ok := pressureEvents[c.Type]
		if !ok || (p != nil && p.Status == c.Status) {
			continue
		}
		switch c.Status {
		case v1.ConditionFalse:
			out = append(out, names[0])
		case v1.ConditionTrue:
			out = append(out, names[1])
		}
	}
	return out
}
