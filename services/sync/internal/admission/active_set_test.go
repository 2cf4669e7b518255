package admission

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/services/sync/internal/syncloop"
)

// countMarshals makes c count the pods it encodes.
func countMarshals(c *Client) *atomic.Int64 {
	var n atomic.Int64
	c.active.marshal = func(p *v1.Pod) ([]byte, error) {
		n.Add(1)
		return p.Marshal()
	}
	return &n
}

func admitAllResp(*v1.Pod, []*v1.Pod) *admissionv1.AdmitResponse {
	return &admissionv1.AdmitResponse{Admit: true}
}

// TestAdmitSendsActivePodsByReference follows one client through calls
// whose active set changes a little each time: what it encodes, and what
// it sends in full or by reference.
func TestAdmitSendsActivePodsByReference(t *testing.T) {
	svc := &fakeService{admit: admitAllResp}
	c := New(serve(t, svc), Options{})
	marshals := countMarshals(c)
	newPod, a, b := pod("new", "1Mi"), pod("a", "1Mi"), pod("b", "2Mi")
	changedB := pod("b", "3Mi")
	sameA := a.DeepCopy()
	for _, step := range []struct {
		desc         string
		active       []*v1.Pod
		restart      bool
		wantMarshals int64
		// wantRequests are the requests the call made: active pods in
		// full and by reference each.
		wantRequests []fakeRequest
	}{
		{
			desc: "first call: everything encoded and sent in full", active: []*v1.Pod{a, b},
			wantMarshals: 3, wantRequests: []fakeRequest{{rpc: "Admit", pods: []string{"new"}, full: 2}},
		},
		{
			desc: "same objects: nothing encoded, all by reference", active: []*v1.Pod{a, b},
			wantRequests: []fakeRequest{{rpc: "Admit", pods: []string{"new"}, byRef: 2}},
		},
		{
			desc: "a changed pod (new object) is encoded and sent in full", active: []*v1.Pod{a, changedB},
			wantMarshals: 1, wantRequests: []fakeRequest{{rpc: "Admit", pods: []string{"new"}, full: 1, byRef: 1}},
		},
		{
			desc: "a new object with the same bytes is encoded but still sent by reference", active: []*v1.Pod{sameA, changedB},
			wantMarshals: 1, wantRequests: []fakeRequest{{rpc: "Admit", pods: []string{"new"}, byRef: 2}},
		},
		{
			desc: "after an admission restart the unknown pods are sent in full once", active: []*v1.Pod{sameA, changedB}, restart: true,
			wantRequests: []fakeRequest{
				{rpc: "Admit", pods: []string{"new"}, byRef: 2, failed: true},
				{rpc: "Admit", pods: []string{"new"}, full: 2},
			},
		},
		{
			desc: "and by reference again afterwards", active: []*v1.Pod{sameA, changedB},
			wantRequests: []fakeRequest{{rpc: "Admit", pods: []string{"new"}, byRef: 2}},
		},
	} {
		if step.restart {
			svc.forget()
		}
		before, sentBefore := marshals.Load(), len(svc.requestLog())
		got, err := c.Admit(context.Background(), newPod, step.active)
		if err != nil || !got.Admit {
			t.Fatalf("%s: Admit = %+v, %v", step.desc, got, err)
		}
		if n := marshals.Load() - before; n != step.wantMarshals {
			t.Errorf("%s: %d pods encoded, want %d", step.desc, n, step.wantMarshals)
		}
		if reqs := svc.requestLog()[sentBefore:]; fmt.Sprint(reqs) != fmt.Sprint(step.wantRequests) {
			t.Errorf("%s: requests %+v, want %+v", step.desc, reqs, step.wantRequests)
		}
		// The server resolved the active set to the pods sent.
		svc.mu.Lock()
		var mem []string
		for _, p := range svc.gotActive {
			q := p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory]
			mem = append(mem, p.Name+"="+q.String())
		}
		svc.mu.Unlock()
		var want []string
		for _, p := range step.active {
			q := p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory]
			want = append(want, p.Name+"="+q.String())
		}
		if fmt.Sprint(mem) != fmt.Sprint(want) {
			t.Errorf("%s: server saw active %v, want %v", step.desc, mem, want)
		}
	}
}

// TestAdmitNamesTheActiveSet follows a client of a server that keeps
// active sets: an unchanged set goes as its digest alone, a changed one by
// reference once; after a restart the set, then the pods, are sent again.
func TestAdmitNamesTheActiveSet(t *testing.T) {
	svc := &fakeService{admit: admitAllResp, keepsSets: true}
	c := New(serve(t, svc), Options{})
	newPod, a, b := pod("new", "1Mi"), pod("a", "1Mi"), pod("b", "2Mi")
	sameA := a.DeepCopy()
	for _, step := range []struct {
		desc    string
		active  []*v1.Pod
		restart bool
		// wantRequests are the requests the call made.
		wantRequests []fakeRequest
	}{
		{
			desc: "first call: in full, with the digest", active: []*v1.Pod{a, b},
			wantRequests: []fakeRequest{{rpc: "Admit", pods: []string{"new"}, full: 2}},
		},
		{
			desc: "the same set: its digest alone", active: []*v1.Pod{a, b},
			wantRequests: []fakeRequest{{rpc: "Admit", pods: []string{"new"}, bySet: true}},
		},
		{
			desc: "a new object with the same bytes is still the same set", active: []*v1.Pod{sameA, b},
			wantRequests: []fakeRequest{{rpc: "Admit", pods: []string{"new"}, bySet: true}},
		},
		{
			desc: "another order is another set, sent by reference", active: []*v1.Pod{b, sameA},
			wantRequests: []fakeRequest{{rpc: "Admit", pods: []string{"new"}, byRef: 2}},
		},
		{
			desc: "after a restart: the digest, the references, then the pods in full", active: []*v1.Pod{b, sameA}, restart: true,
			wantRequests: []fakeRequest{
				{rpc: "Admit", pods: []string{"new"}, bySet: true, failed: true},
				{rpc: "Admit", pods: []string{"new"}, byRef: 2, failed: true},
				{rpc: "Admit", pods: []string{"new"}, full: 2},
			},
		},
		{
			desc: "and the digest alone again afterwards", active: []*v1.Pod{b, sameA},
			wantRequests: []fakeRequest{{rpc: "Admit", pods: []string{"new"}, bySet: true}},
		},
		{
			desc: "no active pods: the empty set's digest", active: nil,
			wantRequests: []fakeRequest{{rpc: "Admit", pods: []string{"new"}, bySet: true}},
		},
	} {
		if step.restart {
			svc.forget()
		}
		sentBefore := len(svc.requestLog())
		if got, err := c.Admit(context.Background(), newPod, step.active); err != nil || !got.Admit {
			t.Fatalf("%s: Admit = %+v, %v", step.desc, got, err)
		}
		if reqs := svc.requestLog()[sentBefore:]; fmt.Sprint(reqs) != fmt.Sprint(step.wantRequests) {
			t.Errorf("%s: requests %+v, want %+v", step.desc, reqs, step.wantRequests)
		}
		checkSawActive(t, svc, step.desc, step.active)
	}
	// AdmitPods names the same set the same way. (The call before named
	// no active pods, so the client forgot b and a and sends them in full.)
	sentBefore := len(svc.requestLog())
	if _, err := c.AdmitPods(context.Background(), []*v1.Pod{pod("x", "")}, []*v1.Pod{b, sameA}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AdmitPods(context.Background(), []*v1.Pod{pod("y", "")}, []*v1.Pod{b, sameA}); err != nil {
		t.Fatal(err)
	}
	want := []fakeRequest{{rpc: "AdmitPods", pods: []string{"x"}, full: 2}, {rpc: "AdmitPods", pods: []string{"y"}, bySet: true}}
	if reqs := svc.requestLog()[sentBefore:]; fmt.Sprint(reqs) != fmt.Sprint(want) {
		t.Errorf("AdmitPods requests %+v, want %+v", reqs, want)
	}
}

// TestAdmitPodsSendsTheSetsChange follows a burst against a server that
// keeps sets: each call's active set is the last one plus the pods just
// admitted, less the pods that stopped, and goes as that change (the added
// pods by reference: the server decoded them as pods to admit), never as
// the whole set, unless the change cannot say it or is not smaller.
func TestAdmitPodsSendsTheSetsChange(t *testing.T) {
	svc := &fakeService{admit: admitAllResp, keepsSets: true}
	c := New(serve(t, svc), Options{})
	a, b, cc, d := pod("a", "1Mi"), pod("b", "1Mi"), pod("c", "1Mi"), pod("d", "1Mi")
	x, y, z := pod("x", ""), pod("y", ""), pod("z", "")
	for _, step := range []struct {
		desc         string
		pods, active []*v1.Pod
		restart      bool
		wantRequests []fakeRequest
	}{
		{desc: "first call: the set in full", pods: []*v1.Pod{x}, active: []*v1.Pod{a, b, cc},
			wantRequests: []fakeRequest{{rpc: "AdmitPods", pods: []string{"x"}, full: 3}}},
		{desc: "x joins in the middle: one pod added", pods: []*v1.Pod{y}, active: []*v1.Pod{a, x, b, cc},
			wantRequests: []fakeRequest{{rpc: "AdmitPods", pods: []string{"y"}, byRef: 1, changed: true}}},
		{desc: "b stops and y joins at the end", pods: []*v1.Pod{z}, active: []*v1.Pod{a, x, cc, y},
			wantRequests: []fakeRequest{{rpc: "AdmitPods", pods: []string{"z"}, byRef: 1, changed: true, removed: 1}}},
		{desc: "the same set: its digest alone", pods: []*v1.Pod{z}, active: []*v1.Pod{a, x, cc, y},
			wantRequests: []fakeRequest{{rpc: "AdmitPods", pods: []string{"z"}, bySet: true}}},
		{desc: "another order: no change says it, the references do", pods: []*v1.Pod{z}, active: []*v1.Pod{cc, a, x, y},
			wantRequests: []fakeRequest{{rpc: "AdmitPods", pods: []string{"z"}, byRef: 4}}},
		{desc: "after a restart: the change, the references, then the pods in full", pods: []*v1.Pod{d}, active: []*v1.Pod{cc, a, x, y, z}, restart: true,
			wantRequests: []fakeRequest{
				{rpc: "AdmitPods", pods: []string{"d"}, changed: true, failed: true},
				{rpc: "AdmitPods", pods: []string{"d"}, byRef: 5, failed: true},
				{rpc: "AdmitPods", pods: []string{"d"}, full: 5},
			}},
		{desc: "most of the set replaced: the references are smaller", pods: []*v1.Pod{x}, active: []*v1.Pod{d, y},
			wantRequests: []fakeRequest{{rpc: "AdmitPods", pods: []string{"x"}, byRef: 2}}},
	} {
		if step.restart {
			svc.forget()
		}
		sentBefore := len(svc.requestLog())
		got, err := c.AdmitPods(context.Background(), step.pods, step.active)
		if err != nil || len(got) != len(step.pods) || !got[0].Admit {
			t.Fatalf("%s: AdmitPods = %+v, %v", step.desc, got, err)
		}
		if reqs := svc.requestLog()[sentBefore:]; fmt.Sprint(reqs) != fmt.Sprint(step.wantRequests) {
			t.Errorf("%s: requests %+v, want %+v", step.desc, reqs, step.wantRequests)
		}
		checkSawActive(t, svc, step.desc, step.active)
	}
}

// TestAdmitPodsChangeToAnOlderServer: a server that keeps sets but
// predates active_change sees a request naming an unknown set by digest,
// and the client sends the references instead: one call more, the right
// set.
func TestAdmitPodsChangeToAnOlderServer(t *testing.T) {
	svc := &fakeService{admit: admitAllResp, keepsSets: true, ignoresChanges: true}
	c := New(serve(t, svc), Options{})
	a, b, x, y := pod("a", "1Mi"), pod("b", "1Mi"), pod("x", ""), pod("y", "")
	if _, err := c.AdmitPods(context.Background(), []*v1.Pod{x}, []*v1.Pod{a, b}); err != nil {
		t.Fatal(err)
	}
	sentBefore := len(svc.requestLog())
	if _, err := c.AdmitPods(context.Background(), []*v1.Pod{y}, []*v1.Pod{a, b, x}); err != nil {
		t.Fatal(err)
	}
	want := []fakeRequest{
		{rpc: "AdmitPods", pods: []string{"y"}, bySet: true, failed: true},
		{rpc: "AdmitPods", pods: []string{"y"}, byRef: 3},
	}
	if reqs := svc.requestLog()[sentBefore:]; fmt.Sprint(reqs) != fmt.Sprint(want) {
		t.Errorf("requests %+v, want %+v", reqs, want)
	}
	checkSawActive(t, svc, "after the fallback", []*v1.Pod{a, b, x})
}

func TestInactivePodsAreForgotten(t *testing.T) {
	svc := &fakeService{admit: admitAllResp}
	c := New(serve(t, svc), Options{})
	a, b := pod("a", ""), pod("b", "")
	ctx := context.Background()
	if _, err := c.Admit(ctx, pod("new", ""), []*v1.Pod{a, b}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admit(ctx, pod("other", ""), []*v1.Pod{a}); err != nil {
		t.Fatal(err)
	}
	c.active.mu.Lock()
	defer c.active.mu.Unlock()
	var held []types.UID
	for uid := range c.active.byUID {
		held = append(held, uid)
	}
	if len(held) != 2 || c.active.byUID["uid-a"] == nil || c.active.byUID["uid-other"] == nil {
		t.Errorf("cache holds %v, want uid-a and uid-other (b and new are no longer named)", held)
	}
}

func TestAdmitPods(t *testing.T) {
	// Room for 3Mi of memory: pods judged as the server would, in order.
	fits := func(p *v1.Pod, active []*v1.Pod) *admissionv1.AdmitResponse {
		var sum resource.Quantity
		for _, a := range append(active, p) {
			sum.Add(a.Spec.Containers[0].Resources.Requests[v1.ResourceMemory])
		}
		if sum.Cmp(resource.MustParse("3Mi")) > 0 {
			return &admissionv1.AdmitResponse{Reason: "OutOfmemory", Message: "m"}
		}
		return &admissionv1.AdmitResponse{Admit: true}
	}
	svc := &fakeService{admit: fits}
	c := New(serve(t, svc), Options{MaxBatch: 3})
	ctx := context.Background()
	running := pod("running", "1Mi")
	pods := []*v1.Pod{pod("a", "1Mi"), pod("b", "2Mi"), pod("c", "1Mi"), pod("d", "")}

	got, err := c.AdmitPods(ctx, pods, []*v1.Pod{running})
	if err != nil {
		t.Fatal(err)
	}
	// MaxBatch 3: a (2Mi in all) admitted, b (4Mi) refused, c (3Mi) admitted.
	want := []syncloop.AdmitResult{{Admit: true}, {Reason: "OutOfmemory", Message: "m"}, {Admit: true}}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("AdmitPods = %+v, want %+v", got, want)
	}
	// The rest, with the admitted pods now active: a and c were sent in
	// full as pods to admit, so the server holds them and they go by
	// reference.
	svc.forget() // and a restart in between: everything is resent once
	got, err = c.AdmitPods(ctx, pods[3:], []*v1.Pod{running, pods[0], pods[2]})
	if err != nil || len(got) != 1 || !got[0].Admit {
		t.Fatalf("AdmitPods(rest) = %+v, %v", got, err)
	}
	got, err = c.AdmitPods(ctx, []*v1.Pod{pod("e", "")}, []*v1.Pod{running, pods[0], pods[2], pods[3]})
	if err != nil || len(got) != 1 || !got[0].Admit {
		t.Fatalf("AdmitPods(e) = %+v, %v", got, err)
	}
	wantReqs := []fakeRequest{
		{rpc: "AdmitPods", pods: []string{"a", "b", "c"}, full: 1},
		{rpc: "AdmitPods", pods: []string{"d"}, byRef: 3, failed: true},
		{rpc: "AdmitPods", pods: []string{"d"}, full: 3},
		{rpc: "AdmitPods", pods: []string{"e"}, byRef: 4},
	}
	if reqs := svc.requestLog(); fmt.Sprint(reqs) != fmt.Sprint(wantReqs) {
		t.Errorf("requests %+v, want %+v", reqs, wantReqs)
	}
}

func TestAdmitPodsStopsAtVictims(t *testing.T) {
	svc := &fakeService{admit: func(p *v1.Pod, _ []*v1.Pod) *admissionv1.AdmitResponse {
		if p.Name == "critical" {
			return &admissionv1.AdmitResponse{Reason: "OutOfpods", Message: "m",
				Victims: []*admissionv1.PodRef{{Namespace: "default", Name: "be", Uid: "uid-be"}}, VictimReason: "Preempting", VictimMessage: "vm"}
		}
		return &admissionv1.AdmitResponse{Admit: true}
	}}
	c := New(serve(t, svc), Options{})
	got, err := c.AdmitPods(context.Background(), []*v1.Pod{pod("a", ""), pod("critical", ""), pod("c", "")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Admit || len(got[1].Victims) != 1 || got[1].Victims[0].UID != "uid-be" || got[1].VictimReason != "Preempting" {
		t.Errorf("AdmitPods = %+v, want a admitted, then critical with victim be", got)
	}
}

func TestAdmitPodsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		desc, endpoint string
	}{
		{desc: "nothing listens", endpoint: closed},
		{desc: "no answer within the timeout", endpoint: serve(t, &slowBatch{fakeService: &fakeService{admit: admitAllResp}, delay: time.Hour})},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := New(tc.endpoint, Options{Timeout: 200 * time.Millisecond})
			_, err := c.AdmitPods(context.Background(), []*v1.Pod{pod("a", ""), pod("b", "")}, []*v1.Pod{pod("x", "")})
			if !errors.Is(err, syncloop.ErrAdmissionUnavailable) {
				t.Fatalf("AdmitPods error = %v, want ErrAdmissionUnavailable", err)
			}
		})
	}
}

// slowBatch is a fakeService whose AdmitPods waits delay first.
type slowBatch struct {
	*fakeService
	delay time.Duration
}

func (s *slowBatch) AdmitPods(ctx context.Context, req *connect.Request[admissionv1.AdmitPodsRequest]) (*connect.Response[admissionv1.AdmitPodsResponse], error) {
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.fakeService.AdmitPods(ctx, req)
}

// checkSawActive checks that the last request's active set, as svc
// resolved it, is want, by name and in order.
func checkSawActive(t *testing.T, svc *fakeService, desc string, want []*v1.Pod) {
	t.Helper()
	svc.mu.Lock()
	var seen []string
	for _, p := range svc.gotActive {
		seen = append(seen, p.Name)
	}
	svc.mu.Unlock()
	var names []string
	for _, p := range want {
		names = append(names, p.Name)
	}
	if fmt.Sprint(seen) != fmt.Sprint(names) {
		t.Errorf("%s: server saw active %v, want %v", desc, seen, names)
	}
}
