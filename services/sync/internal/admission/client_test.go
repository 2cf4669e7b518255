package admission

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
	"github.com/splitlet/splitlet/services/sync/internal/syncloop"
)

// fakeService is an in-process AdmissionService: Admit and AdmitPods
// decode what they are sent, resolving active pods sent by reference from
// the pods it was sent in full (held, which forget empties as a restart
// would), and answer with admit; WatchEvictions sends the evictions queued
// on evictions, ending the stream after endAfter of them when set.
type fakeService struct {
	admissionv1connect.UnimplementedAdmissionServiceHandler

	mu        sync.Mutex
	gotPod    *v1.Pod
	gotActive []*v1.Pod
	admit     func(pod *v1.Pod, active []*v1.Pod) *admissionv1.AdmitResponse
	delay     time.Duration
	held      map[string]*v1.Pod // by uid + digest
	// sets are the active sets kept by digest; keepsSets makes the
	// service keep them (a server that predates sets does not).
	sets      map[string][]*v1.Pod
	setRefs   map[string][]*admissionv1.ActivePod
	keepsSets bool
	// ignoresChanges makes it a server that predates active_change: it
	// does not see the field.
	ignoresChanges bool
	// requests records each admit request: how many active pods came in
	// full and how many by reference, and the pods it asked about.
	requests []fakeRequest

	evictions chan *admissionv1.WatchEvictionsResponse
	endAfter  int
	streams   int
	// reports receives each ReportReclaim request.
	reports chan *admissionv1.ReportReclaimRequest
}

func (f *fakeService) ReportReclaim(_ context.Context, req *connect.Request[admissionv1.ReportReclaimRequest]) (*connect.Response[admissionv1.ReportReclaimResponse], error) {
	f.reports <- req.Msg
	return connect.NewResponse(&admissionv1.ReportReclaimResponse{}), nil
}

type fakeRequest struct {
	rpc         string
	pods        []string
	full, byRef int
	// bySet: the active set was named by its digest alone; changed: as a
	// change to a held set, removing removed pods (the added count in
	// full and byRef).
	bySet   bool
	changed bool
	removed int
	failed  bool
}

func (f *fakeService) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held, f.sets, f.setRefs = nil, nil, nil
}

func (f *fakeService) requestLog() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// decode decodes the pods and resolves the active set as the real server
// does: a digest must be the SHA-256 of the bytes sent, unknown references
// fail with FailedPrecondition and an UnknownActivePods detail, and an
// unknown set named by digest alone with an UnknownActiveSet detail. With
// keepsSets, it keeps the sets sent with their digests (setHeld), and
// applies a change to one.
func (f *fakeService) decode(rpc string, raws [][]byte, refs []*admissionv1.ActivePod, set []byte, change *admissionv1.ActiveSetChange) (pods, active []*v1.Pod, setHeld bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held, f.sets, f.setRefs = map[string]*v1.Pod{}, map[string][]*v1.Pod{}, map[string][]*admissionv1.ActivePod{}
	}
	r := fakeRequest{rpc: rpc}
	// base are the refs of the held set a change applies to, in order.
	var base []*admissionv1.ActivePod
	if f.ignoresChanges {
		change = nil
	}
	for _, b := range raws {
		p := &v1.Pod{}
		if err := p.Unmarshal(b); err != nil {
			return nil, nil, false, connect.NewError(connect.CodeInvalidArgument, err)
		}
		d := sha256.Sum256(b)
		f.held[string(p.UID)+string(d[:])] = p
		pods = append(pods, p)
		r.pods = append(r.pods, p.Name)
	}
	if f.keepsSets && change != nil {
		r.changed, r.removed = true, len(change.GetRemoved())
		var ok bool
		if base, ok = f.setRefs[string(change.GetBase())]; !ok {
			r.failed = true
			f.requests = append(f.requests, r)
			ce := connect.NewError(connect.CodeFailedPrecondition, errors.New("base not held"))
			d, err := connect.NewErrorDetail(&admissionv1.UnknownActiveSet{Digest: change.GetBase()})
			if err != nil {
				return nil, nil, false, err
			}
			ce.AddDetail(d)
			return nil, nil, false, ce
		}
		base = slices.DeleteFunc(slices.Clone(base), func(a *admissionv1.ActivePod) bool { return slices.Contains(change.GetRemoved(), a.GetUid()) })
		for j, a := range change.GetAdded() {
			base = slices.Insert(base, int(change.GetAddedAt()[j]), a)
		}
		refs = base
	}
	if f.keepsSets && len(set) > 0 && len(refs) == 0 && change == nil {
		r.bySet = true
		var ok bool
		active, ok = f.sets[string(set)]
		active = slices.Clip(active)
		if d := sha256.Sum256(nil); string(set) == string(d[:]) {
			active, ok = nil, true
		}
		if !ok {
			r.failed = true
			f.requests = append(f.requests, r)
			ce := connect.NewError(connect.CodeFailedPrecondition, errors.New("set not held"))
			d, err := connect.NewErrorDetail(&admissionv1.UnknownActiveSet{Digest: set})
			if err != nil {
				return nil, nil, false, err
			}
			ce.AddDetail(d)
			return nil, nil, false, ce
		}
	}
	var missing []string
	var digests []byte
	for _, a := range refs {
		digests = append(digests, a.GetDigest()...)
		if len(a.GetPod()) == 0 {
			if !slices.Contains(change.GetAdded(), a) && change != nil {
				// A pod of the base: held, not sent.
				active = append(active, f.held[a.GetUid()+string(a.GetDigest())])
				continue
			}
			r.byRef++
			p, ok := f.held[a.GetUid()+string(a.GetDigest())]
			if !ok {
				missing = append(missing, a.GetUid())
			}
			active = append(active, p)
			continue
		}
		r.full++
		p := &v1.Pod{}
		if err := p.Unmarshal(a.GetPod()); err != nil {
			return nil, nil, false, connect.NewError(connect.CodeInvalidArgument, err)
		}
		if d := sha256.Sum256(a.GetPod()); !bytes.Equal(d[:], a.GetDigest()) || string(p.UID) != a.GetUid() {
			return nil, nil, false, connect.NewError(connect.CodeInvalidArgument, errors.New("reference does not match its bytes"))
		}
		f.held[a.GetUid()+string(a.GetDigest())] = p
		active = append(active, p)
	}
	r.failed = len(missing) > 0
	f.requests = append(f.requests, r)
	if len(missing) > 0 {
		ce := connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("not held: %v", missing))
		d, err := connect.NewErrorDetail(&admissionv1.UnknownActivePods{Uids: missing})
		if err != nil {
			return nil, nil, false, err
		}
		ce.AddDetail(d)
		return nil, nil, false, ce
	}
	if f.keepsSets && len(set) > 0 && !r.bySet {
		if d := sha256.Sum256(digests); string(set) != string(d[:]) {
			return nil, nil, false, connect.NewError(connect.CodeInvalidArgument, errors.New("active_set: not the digest of active"))
		}
		f.sets[string(set)] = active
		kept := make([]*admissionv1.ActivePod, len(refs))
		for i, a := range refs {
			kept[i] = &admissionv1.ActivePod{Uid: a.GetUid(), Digest: a.GetDigest()}
		}
		f.setRefs[string(set)] = kept
	}
	return pods, active, f.keepsSets && len(set) > 0, nil
}

func (f *fakeService) Admit(ctx context.Context, req *connect.Request[admissionv1.AdmitRequest]) (*connect.Response[admissionv1.AdmitResponse], error) {
	pods, active, setHeld, err := f.decode("Admit", [][]byte{req.Msg.GetPod()}, req.Msg.GetActive(), req.Msg.GetActiveSet(), req.Msg.GetActiveChange())
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.gotPod, f.gotActive = pods[0], active
	delay := f.delay
	f.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	resp := f.admit(pods[0], active)
	resp.ActiveSetHeld = setHeld
	return connect.NewResponse(resp), nil
}

// AdmitPods answers as consecutive Admit calls: admitted pods join active,
// and the answers stop after the first with victims.
func (f *fakeService) AdmitPods(ctx context.Context, req *connect.Request[admissionv1.AdmitPodsRequest]) (*connect.Response[admissionv1.AdmitPodsResponse], error) {
	pods, active, setHeld, err := f.decode("AdmitPods", req.Msg.GetPods(), req.Msg.GetActive(), req.Msg.GetActiveSet(), req.Msg.GetActiveChange())
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.gotActive = slices.Clone(active)
	f.mu.Unlock()
	out := &admissionv1.AdmitPodsResponse{ActiveSetHeld: setHeld}
	for _, p := range pods {
		r := f.admit(p, active)
		out.Results = append(out.Results, r)
		if len(r.GetVictims()) > 0 {
			break
		}
		if r.GetAdmit() {
			active = append(active, p)
		}
	}
	return connect.NewResponse(out), nil
}

func (f *fakeService) WatchEvictions(ctx context.Context, _ *connect.Request[admissionv1.WatchEvictionsRequest], stream *connect.ServerStream[admissionv1.WatchEvictionsResponse]) error {
	f.mu.Lock()
	f.streams++
	f.mu.Unlock()
	if err := stream.Send(nil); err != nil {
		return nil
	}
	for sent := 0; f.endAfter == 0 || sent < f.endAfter; sent++ {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-f.evictions:
			if err := stream.Send(ev); err != nil {
				return nil
			}
		}
	}
	return connect.NewError(connect.CodeUnavailable, errors.New("draining"))
}

// serve runs svc over cleartext HTTP/2 and returns its address.
func serve(t *testing.T, svc admissionv1connect.AdmissionServiceHandler) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(admissionv1connect.NewAdmissionServiceHandler(svc))
	srv := httptest.NewUnstartedServer(mux)
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Start()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func pod(name string, memory string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	if memory != "" {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(memory)}
	}
	return p
}

func TestAdmit(t *testing.T) {
	for _, tc := range []struct {
		desc string
		resp *admissionv1.AdmitResponse
		want syncloop.AdmitResult
	}{
		{desc: "admit", resp: &admissionv1.AdmitResponse{Admit: true}, want: syncloop.AdmitResult{Admit: true}},
		{
			desc: "reject",
			resp: &admissionv1.AdmitResponse{Reason: "OutOfmemory", Message: "Node didn't have enough resource: memory"},
			want: syncloop.AdmitResult{Reason: "OutOfmemory", Message: "Node didn't have enough resource: memory"},
		},
		{
			desc: "victims",
			resp: &admissionv1.AdmitResponse{Reason: "OutOfmemory", Message: "m",
				Victims:      []*admissionv1.PodRef{{Namespace: "default", Name: "be", Uid: "u1"}},
				VictimReason: "Preempting", VictimMessage: "Preempted in order to admit critical pod"},
			want: syncloop.AdmitResult{Reason: "OutOfmemory", Message: "m",
				Victims:      []syncloop.PodRef{{Namespace: "default", Name: "be", UID: "u1"}},
				VictimReason: "Preempting", VictimMessage: "Preempted in order to admit critical pod"},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			svc := &fakeService{admit: func(*v1.Pod, []*v1.Pod) *admissionv1.AdmitResponse { return tc.resp }}
			c := New(serve(t, svc), Options{})
			got, err := c.Admit(context.Background(), pod("new", "2Gi"), []*v1.Pod{pod("a", ""), pod("b", "1Mi")})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", tc.want) {
				t.Errorf("Admit = %+v, want %+v", got, tc.want)
			}
			// The pods crossed the wire intact (Kubernetes protobuf).
			svc.mu.Lock()
			defer svc.mu.Unlock()
			if q := svc.gotPod.Spec.Containers[0].Resources.Requests[v1.ResourceMemory]; svc.gotPod.Name != "new" || q.String() != "2Gi" {
				t.Errorf("server got pod %s with memory %s", svc.gotPod.Name, q.String())
			}
			if len(svc.gotActive) != 2 || svc.gotActive[1].Name != "b" {
				t.Errorf("server got %d active pods", len(svc.gotActive))
			}
		})
	}
}

func TestAdmitUnavailable(t *testing.T) {
	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	slow := serve(t, &fakeService{delay: time.Hour, admit: func(*v1.Pod, []*v1.Pod) *admissionv1.AdmitResponse {
		return &admissionv1.AdmitResponse{Admit: true}
	}})
	for _, tc := range []struct {
		desc, endpoint string
	}{
		{desc: "nothing listens", endpoint: closed},
		{desc: "no answer within the timeout", endpoint: slow},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := New(tc.endpoint, Options{Timeout: 200 * time.Millisecond})
			start := time.Now()
			_, err := c.Admit(context.Background(), pod("p", ""), nil)
			if !errors.Is(err, syncloop.ErrAdmissionUnavailable) {
				t.Fatalf("Admit error = %v, want ErrAdmissionUnavailable", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Admit took %s despite the 200ms timeout", d)
			}
		})
	}
}

// eviction is one EvictPod call.
type eviction struct {
	ref             syncloop.PodRef
	reason, message string
	grace           *int64
}

type fakeEvictor struct{ got chan eviction }

var _ syncloop.Evictor = (*fakeEvictor)(nil)

func (f *fakeEvictor) EvictPod(_ context.Context, ref syncloop.PodRef, reason, message string, grace *int64) error {
	f.got <- eviction{ref: ref, reason: reason, message: message, grace: grace}
	return nil
}

func TestWatchEvictionsReconnects(t *testing.T) {
	// The server ends each stream after one eviction, so the second
	// eviction arrives only if the watcher reconnects.
	svc := &fakeService{evictions: make(chan *admissionv1.WatchEvictionsResponse, 2), endAfter: 1}
	grace := int64(1)
	svc.evictions <- &admissionv1.WatchEvictionsResponse{
		Pod: &admissionv1.PodRef{Namespace: "default", Name: "hog", Uid: "u1"}, Reason: "Evicted",
		Message: "The node was low on resource: memory.", Signal: "memory.available", GracePeriodSeconds: &grace,
	}
	svc.evictions <- &admissionv1.WatchEvictionsResponse{Pod: &admissionv1.PodRef{Namespace: "default", Name: "second"}}
	c := New(serve(t, svc), Options{RetryInitial: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	ev := &fakeEvictor{got: make(chan eviction, 2)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.WatchEvictions(ctx, ev, NodeGC{}); close(done) }()

	var got []eviction
	for len(got) < 2 {
		select {
		case e := <-ev.got:
			got = append(got, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d evictions, want 2", len(got))
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("WatchEvictions did not return after ctx ended")
	}
	first := got[0]
	if first.ref != (syncloop.PodRef{Namespace: "default", Name: "hog", UID: "u1"}) || first.reason != "Evicted" ||
		first.message != "The node was low on resource: memory." || first.grace == nil || *first.grace != 1 {
		t.Errorf("first eviction = %+v", first)
	}
	if got[1].ref.Name != "second" || got[1].reason != syncloop.ReasonEvicted || got[1].grace != nil {
		t.Errorf("second eviction = %+v, want reason defaulted to Evicted and no grace override", got[1])
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if svc.streams < 2 {
		t.Errorf("streams opened = %d, want a reconnection", svc.streams)
	}
}
