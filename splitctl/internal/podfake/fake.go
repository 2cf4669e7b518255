// Package podfake is an in-memory PodService for splitctl's tests. It follows
// the proto's documented contract (atomic Apply with per-document errors,
// graceful Delete, Watch that sends the current pods then changes, Events
// with follow, Logs with kubectl's options) and records every request so a
// test can assert what splitctl sent.
package podfake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
	"github.com/splitlet/splitlet/splitctl/internal/client"
)

// Server is the fake. The zero value is not usable; call New.
type Server struct {
	podv1connect.UnimplementedPodServiceHandler

	mu       sync.Mutex
	pods     map[string]*corev1.Pod // by namespace/name
	events   []*corev1.Event
	logs     map[string]string                 // by namespace/name/container[/previous]
	watchers map[chan watchEvent]chan struct{} // value closed to end the watch
	evSubs   map[chan *corev1.Event]struct{}
	requests []proto.Message
	nextUID  int
	sent     int // watch events sent, for tests that wait on delivery

	// Now is the clock stamped on created and deleted pods.
	Now func() time.Time
	// RemoveOnDelete makes Delete remove the pod at once (a DELETED watch
	// event follows), as if its containers stopped immediately.
	RemoveOnDelete bool
	// ExecResult is what ExecSync answers.
	ExecResult *podv1.ExecSyncResponse
	// ExecURL is what Exec answers.
	ExecURL string
	// Err, when set for a procedure name such as "Get", is returned instead.
	Err map[string]error
}

type watchEvent struct {
	typ podv1.WatchEventType
	pod *corev1.Pod
}

var _ podv1connect.PodServiceHandler = (*Server)(nil)

// New returns an empty fake.
func New() *Server {
	return &Server{
		pods:     map[string]*corev1.Pod{},
		logs:     map[string]string{},
		watchers: map[chan watchEvent]chan struct{}{},
		evSubs:   map[chan *corev1.Event]struct{}{},
		Now:      time.Now,
		Err:      map[string]error{},
	}
}

// Requests returns the request messages received so far, in order.
func (s *Server) Requests() []proto.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]proto.Message(nil), s.requests...)
}

// LastRequest returns the last request of type T, or nil.
func LastRequest[T proto.Message](s *Server) T {
	var zero T
	reqs := s.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if r, ok := reqs[i].(T); ok {
			return r
		}
	}
	return zero
}

func (s *Server) record(name string, m proto.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, proto.Clone(m))
	return s.Err[name]
}

func key(ns, name string) string { return ns + "/" + name }

// WatcherCount is the number of open watches.
func (s *Server) WatcherCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.watchers)
}

// EndWatches ends every open watch cleanly, as splitlet-sync ends a watcher
// that fell behind.
func (s *Server) EndWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch, end := range s.watchers {
		close(end)
		delete(s.watchers, ch)
	}
}

// WatchEventsSent is the number of watch events sent on all streams.
func (s *Server) WatchEventsSent() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// SetPod stores pod as is (status included) and tells watchers.
func (s *Server) SetPod(pod *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := pod.DeepCopy()
	if p.Namespace == "" {
		p.Namespace = metav1.NamespaceDefault
	}
	typ := podv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED
	if _, ok := s.pods[key(p.Namespace, p.Name)]; !ok {
		typ = podv1.WatchEventType_WATCH_EVENT_TYPE_ADDED
	}
	s.pods[key(p.Namespace, p.Name)] = p
	s.notify(typ, p)
}

// UpdatePod changes a stored pod and tells watchers; false if there is none.
func (s *Server) UpdatePod(ns, name string, change func(*corev1.Pod)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[key(ns, name)]
	if !ok {
		return false
	}
	change(p)
	s.notify(podv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED, p)
	return true
}

// Pod returns a copy of a stored pod.
func (s *Server) Pod(ns, name string) (*corev1.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pods[key(ns, name)]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

// AddEvent records an event and sends it to followers.
func (s *Server) AddEvent(ev *corev1.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev.DeepCopy())
	for ch := range s.evSubs {
		select {
		case ch <- ev.DeepCopy():
		default:
		}
	}
}

// SetLog sets a container's log; previous selects the last terminated instance.
func (s *Server) SetLog(ns, pod, container string, previous bool, content string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs[logKey(ns, pod, container, previous)] = content
}

func logKey(ns, pod, container string, previous bool) string {
	k := ns + "/" + pod + "/" + container
	if previous {
		k += "/previous"
	}
	return k
}

// notify must be called with mu held.
func (s *Server) notify(typ podv1.WatchEventType, p *corev1.Pod) {
	for ch := range s.watchers {
		select {
		case ch <- watchEvent{typ: typ, pod: p.DeepCopy()}:
		default: // a stuck watcher must not block the fake
		}
	}
}

// Apply decodes every document first and applies nothing if one is invalid.
func (s *Server) Apply(_ context.Context, req *connect.Request[podv1.ApplyRequest]) (*connect.Response[podv1.ApplyResponse], error) {
	if err := s.record("Apply", req.Msg); err != nil {
		return nil, err
	}
	pods, err := decodeManifest(req.Msg.GetManifest())
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	resp := &podv1.ApplyResponse{}
	for _, p := range pods {
		action := podv1.ApplyAction_APPLY_ACTION_CREATED
		old, exists := s.pods[key(p.Namespace, p.Name)]
		if exists {
			action = podv1.ApplyAction_APPLY_ACTION_UNCHANGED
			if !reflect.DeepEqual(old.Spec, p.Spec) || !reflect.DeepEqual(old.Labels, p.Labels) {
				action = podv1.ApplyAction_APPLY_ACTION_CONFIGURED
			}
			p.UID = old.UID
			p.CreationTimestamp = old.CreationTimestamp
			p.Status = old.Status
		} else {
			s.nextUID++
			p.UID = types.UID(fmt.Sprintf("uid-%d", s.nextUID))
			p.CreationTimestamp = metav1.NewTime(s.Now())
			p.Status.Phase = corev1.PodPending
		}
		resp.Pods = append(resp.Pods, &podv1.AppliedPod{Namespace: p.Namespace, Name: p.Name, Uid: string(p.UID), Action: action})
		if req.Msg.GetDryRun() {
			continue
		}
		s.pods[key(p.Namespace, p.Name)] = p
		typ := podv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED
		if !exists {
			typ = podv1.WatchEventType_WATCH_EVENT_TYPE_ADDED
		}
		s.notify(typ, p)
	}
	return connect.NewResponse(resp), nil
}

func decodeManifest(manifest string) ([]*corev1.Pod, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var pods []*corev1.Pod
	for doc := 0; ; doc++ {
		var p corev1.Pod
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if p.Kind == "" && p.Name == "" && len(p.Spec.Containers) == 0 {
			continue // an empty document between separators
		}
		if p.Kind != "Pod" {
			return nil, fmt.Errorf("document %d: kind %q is not Pod", doc, p.Kind)
		}
		if p.Name == "" {
			return nil, fmt.Errorf("document %d: metadata.name: Required value", doc)
		}
		if len(p.Spec.Containers) == 0 {
			return nil, fmt.Errorf("document %d: spec.containers: Required value", doc)
		}
		for i, c := range p.Spec.Containers {
			if c.Image == "" {
				return nil, fmt.Errorf("document %d: spec.containers[%d].image: Required value", doc, i)
			}
		}
		if p.Namespace == "" {
			p.Namespace = metav1.NamespaceDefault
		}
		pods = append(pods, &p)
	}
	if len(pods) == 0 {
		return nil, errors.New("no objects passed to apply")
	}
	return pods, nil
}

// Delete marks the pod terminating, or removes it with RemoveOnDelete.
func (s *Server) Delete(_ context.Context, req *connect.Request[podv1.DeleteRequest]) (*connect.Response[podv1.DeleteResponse], error) {
	if err := s.record("Delete", req.Msg); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(req.Msg.GetNamespace(), req.Msg.GetName())
	p, ok := s.pods[k]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("pod %s not found", k))
	}
	now := metav1.NewTime(s.Now())
	p.DeletionTimestamp = &now
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		grace = *p.Spec.TerminationGracePeriodSeconds
	}
	if req.Msg.GracePeriodSeconds != nil {
		grace = req.Msg.GetGracePeriodSeconds()
	}
	p.DeletionGracePeriodSeconds = &grace
	st, err := client.ToStruct(p)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	if s.RemoveOnDelete {
		delete(s.pods, k)
		s.notify(podv1.WatchEventType_WATCH_EVENT_TYPE_DELETED, p)
	} else {
		s.notify(podv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED, p)
	}
	return connect.NewResponse(&podv1.DeleteResponse{Pod: st}), nil
}

func (s *Server) Get(_ context.Context, req *connect.Request[podv1.GetRequest]) (*connect.Response[podv1.GetResponse], error) {
	if err := s.record("Get", req.Msg); err != nil {
		return nil, err
	}
	p, ok := s.Pod(req.Msg.GetNamespace(), req.Msg.GetName())
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("pod %s not found", key(req.Msg.GetNamespace(), req.Msg.GetName())))
	}
	st, err := client.ToStruct(p)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, err)
	}
	return connect.NewResponse(&podv1.GetResponse{Pod: st}), nil
}

func (s *Server) List(_ context.Context, req *connect.Request[podv1.ListRequest]) (*connect.Response[podv1.ListResponse], error) {
	if err := s.record("List", req.Msg); err != nil {
		return nil, err
	}
	sel, err := labels.Parse(req.Msg.GetLabelSelector())
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	s.mu.Lock()
	var keys []string
	for k, p := range s.pods {
		if matches(p, req.Msg.GetNamespace(), "", sel) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	resp := &podv1.ListResponse{}
	for _, k := range keys {
		st, err := client.ToStruct(s.pods[k])
		if err != nil {
			s.mu.Unlock()
			return nil, connect.NewError(connect.CodeInternal, err)
		}
		resp.Pods = append(resp.Pods, st)
	}
	s.mu.Unlock()
	return connect.NewResponse(resp), nil
}

func matches(p *corev1.Pod, ns, name string, sel labels.Selector) bool {
	return (ns == "" || p.Namespace == ns) && (name == "" || p.Name == name) && sel.Matches(labels.Set(p.Labels))
}

// Watch sends the current pods as ADDED, then every change until the client
// goes away.
func (s *Server) Watch(ctx context.Context, req *connect.Request[podv1.WatchRequest], stream *connect.ServerStream[podv1.WatchResponse]) error {
	if err := s.record("Watch", req.Msg); err != nil {
		return err
	}
	sel, err := labels.Parse(req.Msg.GetLabelSelector())
	if err != nil {
		return connect.NewError(connect.CodeInvalidArgument, err)
	}
	ch := make(chan watchEvent, 256)
	s.mu.Lock()
	var initial []*corev1.Pod
	for _, p := range s.pods {
		if matches(p, req.Msg.GetNamespace(), req.Msg.GetName(), sel) {
			initial = append(initial, p.DeepCopy())
		}
	}
	end := make(chan struct{})
	s.watchers[ch] = end
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.watchers, ch)
		s.mu.Unlock()
	}()
	sort.Slice(initial, func(i, j int) bool { return initial[i].Name < initial[j].Name })
	// Headers first, as splitlet-sync does: a watch may have nothing to send
	// for a long time.
	if err := stream.Send(nil); err != nil {
		return err
	}
	send := func(typ podv1.WatchEventType, p *corev1.Pod) error {
		st, err := client.ToStruct(p)
		if err != nil {
			return connect.NewError(connect.CodeInternal, err)
		}
		if err := stream.Send(&podv1.WatchResponse{Type: typ, Pod: st}); err != nil {
			return err
		}
		s.mu.Lock()
		s.sent++
		s.mu.Unlock()
		return nil
	}
	for _, p := range initial {
		if err := send(podv1.WatchEventType_WATCH_EVENT_TYPE_ADDED, p); err != nil {
			return err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-end:
			return nil
		case ev := <-ch:
			if !matches(ev.pod, req.Msg.GetNamespace(), req.Msg.GetName(), sel) {
				continue
			}
			if err := send(ev.typ, ev.pod); err != nil {
				return err
			}
		}
	}
}

// Events sends the recorded events oldest first, then new ones with follow.
func (s *Server) Events(ctx context.Context, req *connect.Request[podv1.EventsRequest], stream *connect.ServerStream[podv1.EventsResponse]) error {
	if err := s.record("Events", req.Msg); err != nil {
		return err
	}
	want := func(ev *corev1.Event) bool {
		return (req.Msg.GetNamespace() == "" || ev.Namespace == req.Msg.GetNamespace()) &&
			(req.Msg.GetName() == "" || ev.InvolvedObject.Name == req.Msg.GetName())
	}
	ch := make(chan *corev1.Event, 64)
	s.mu.Lock()
	var initial []*corev1.Event
	for _, ev := range s.events {
		if want(ev) {
			initial = append(initial, ev.DeepCopy())
		}
	}
	if req.Msg.GetFollow() {
		s.evSubs[ch] = struct{}{}
		defer func() {
			s.mu.Lock()
			delete(s.evSubs, ch)
			s.mu.Unlock()
		}()
	}
	s.mu.Unlock()
	send := func(evs []*corev1.Event) error {
		resp := &podv1.EventsResponse{}
		for _, ev := range evs {
			st, err := client.ToStruct(ev)
			if err != nil {
				return connect.NewError(connect.CodeInternal, err)
			}
			resp.Events = append(resp.Events, st)
		}
		return stream.Send(resp)
	}
	if err := send(initial); err != nil {
		return err
	}
	if !req.Msg.GetFollow() {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-ch:
			if want(ev) {
				if err := send([]*corev1.Event{ev}); err != nil {
					return err
				}
			}
		}
	}
}

// Logs answers from SetLog content. Lines are stored as
// "<RFC3339 timestamp> <text>"; the timestamp is kept only when asked for, as
// the CRI log format and the kubelet do.
func (s *Server) Logs(_ context.Context, req *connect.Request[podv1.LogsRequest], stream *connect.ServerStream[podv1.LogsResponse]) error {
	if err := s.record("Logs", req.Msg); err != nil {
		return err
	}
	m := req.Msg
	p, ok := s.Pod(m.GetNamespace(), m.GetName())
	if !ok {
		return connect.NewError(connect.CodeNotFound, fmt.Errorf("pod %s not found", key(m.GetNamespace(), m.GetName())))
	}
	container := m.GetContainer()
	if container == "" {
		if len(p.Spec.Containers) != 1 {
			var names []string
			for _, c := range p.Spec.Containers {
				names = append(names, c.Name)
			}
			return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("a container name must be specified for pod %s, choose one of: %v", p.Name, names))
		}
		container = p.Spec.Containers[0].Name
	}
	s.mu.Lock()
	content, ok := s.logs[logKey(m.GetNamespace(), m.GetName(), container, m.GetPrevious())]
	s.mu.Unlock()
	if !ok && m.GetPrevious() {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("previous terminated container %q in pod %q not found", container, p.Name))
	}
	lines := strings.SplitAfter(content, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if m.TailLines != nil && int(m.GetTailLines()) < len(lines) {
		lines = lines[len(lines)-int(m.GetTailLines()):]
	}
	var out bytes.Buffer
	for _, l := range lines {
		if !m.GetTimestamps() {
			if _, rest, ok := strings.Cut(l, " "); ok {
				l = rest
			}
		}
		out.WriteString(l)
	}
	b := out.Bytes()
	if m.LimitBytes != nil && int64(len(b)) > m.GetLimitBytes() {
		b = b[:m.GetLimitBytes()]
	}
	return stream.Send(&podv1.LogsResponse{Data: b})
}

func (s *Server) ExecSync(_ context.Context, req *connect.Request[podv1.ExecSyncRequest]) (*connect.Response[podv1.ExecSyncResponse], error) {
	if err := s.record("ExecSync", req.Msg); err != nil {
		return nil, err
	}
	if _, ok := s.Pod(req.Msg.GetNamespace(), req.Msg.GetName()); !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("pod %s not found", key(req.Msg.GetNamespace(), req.Msg.GetName())))
	}
	if s.ExecResult == nil {
		return connect.NewResponse(&podv1.ExecSyncResponse{}), nil
	}
	return connect.NewResponse(proto.Clone(s.ExecResult).(*podv1.ExecSyncResponse)), nil
}

func (s *Server) Exec(_ context.Context, req *connect.Request[podv1.ExecRequest]) (*connect.Response[podv1.ExecResponse], error) {
	if err := s.record("Exec", req.Msg); err != nil {
		return nil, err
	}
	if s.ExecURL == "" {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("exec streaming is not configured"))
	}
	return connect.NewResponse(&podv1.ExecResponse{Url: s.ExecURL}), nil
}
