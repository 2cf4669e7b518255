package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
)

// echo is a plugin that answers with the active set it was handed: every
// pod as name@resourceVersion, sorted, in Message.
type echo struct{}

func (echo) Admit(_ context.Context, r *Request) (*Response, error) {
	return &Response{Admit: true, Message: names(r.ActivePods)}, nil
}

func names(pods []*v1.Pod) string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name + "@" + p.ResourceVersion
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func setPod(name, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: rv}}
}

// wire is what a client sent its plugin, recorded on the way out.
type wire struct {
	mu   sync.Mutex
	sent []*pluginv1.AdmitRequest
}

// take returns the requests sent since the last take.
func (w *wire) take() []*pluginv1.AdmitRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.sent
	w.sent = nil
	return out
}

// servedPlugin serves srv (which the test keeps, to reach its state) on
// go-plugin's in-process gRPC harness; the client's requests pass through
// w.
type servedPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	srv pluginv1.AdmissionPluginServiceServer
}

func (p *servedPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginv1.RegisterAdmissionPluginServiceServer(s, p.srv)
	return nil
}

func (p *servedPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pluginv1.NewAdmissionPluginServiceClient(c), nil
}

// recordingClient records each AdmitRequest in w before sending it
// (TestPluginGRPCConn takes no dial options for an interceptor).
type recordingClient struct {
	pluginv1.AdmissionPluginServiceClient
	w *wire
}

func (c recordingClient) Admit(ctx context.Context, in *pluginv1.AdmitRequest, opts ...grpc.CallOption) (*pluginv1.AdmitResponse, error) {
	c.w.mu.Lock()
	c.w.sent = append(c.w.sent, proto.Clone(in).(*pluginv1.AdmitRequest))
	c.w.mu.Unlock()
	return c.AdmissionPluginServiceClient.Admit(ctx, in, opts...)
}

// newSetHarness returns a described client of srv and the record of what
// it sends.
func newSetHarness(t *testing.T, srv pluginv1.AdmissionPluginServiceServer) (*GRPCClient, *wire) {
	t.Helper()
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{PluginName: &servedPlugin{srv: srv}})
	t.Cleanup(func() {
		server.Stop()
		_ = client.Close()
	})
	raw, err := client.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	w := &wire{}
	c := &GRPCClient{client: recordingClient{AdmissionPluginServiceClient: raw.(pluginv1.AdmissionPluginServiceClient), w: w}}
	if _, err := c.Describe(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, w
}

// shape summarises a request's active pods: "whole N" or
// "changes +N -uid,uid" (the generation numbers are the sender's business).
func shape(in *pluginv1.AdmitRequest) string {
	set := in.GetActiveSet()
	switch {
	case set == nil:
		return fmt.Sprintf("stateless %d", len(in.GetActivePods()))
	case set.GetBaseGeneration() == 0:
		return fmt.Sprintf("whole %d", len(in.GetActivePods()))
	default:
		return fmt.Sprintf("changes +%d -%s", len(set.GetChangedPods()), strings.Join(set.GetRemovedUids(), ","))
	}
}

func shapes(ins []*pluginv1.AdmitRequest) []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = shape(in)
	}
	return out
}

func admitWith(t *testing.T, c *GRPCClient, active ...*v1.Pod) string {
	t.Helper()
	resp, err := c.Admit(context.Background(), &Request{Pod: setPod("new", "1"), ActivePods: active})
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	return resp.Message
}

func TestActiveSetChanges(t *testing.T) {
	c, w := newSetHarness(t, &grpcServer{impl: echo{}})
	a, b, cc, d := setPod("a", "1"), setPod("b", "1"), setPod("c", "1"), setPod("d", "1")
	steps := []struct {
		desc   string
		active []*v1.Pod
		want   string // what the plugin saw
		sent   string // what went on the wire
	}{
		{desc: "first call: whole set", active: []*v1.Pod{a, b, cc}, want: "a@1,b@1,c@1", sent: "whole 3"},
		{desc: "same set: no changes", active: []*v1.Pod{a, b, cc}, want: "a@1,b@1,c@1", sent: "changes +0 -"},
		{desc: "same set, other order", active: []*v1.Pod{cc, a, b}, want: "a@1,b@1,c@1", sent: "changes +0 -"},
		{desc: "a pod added", active: []*v1.Pod{a, b, cc, d}, want: "a@1,b@1,c@1,d@1", sent: "changes +1 -"},
		{desc: "a pod removed", active: []*v1.Pod{a, cc, d}, want: "a@1,c@1,d@1", sent: "changes +0 -uid-b"},
		{desc: "a pod updated", active: []*v1.Pod{a, setPod("c", "2"), d}, want: "a@1,c@2,d@1", sent: "changes +1 -"},
		{desc: "added, updated and removed at once", active: []*v1.Pod{setPod("a", "3"), setPod("e", "1")}, want: "a@3,e@1", sent: "changes +2 -uid-c,uid-d"},
		{desc: "a removed pod back", active: []*v1.Pod{setPod("a", "3"), setPod("e", "1"), b}, want: "a@3,b@1,e@1", sent: "changes +1 -"},
		{desc: "empty set", active: nil, want: "", sent: "changes +0 -uid-a,uid-b,uid-e"},
		{desc: "from empty", active: []*v1.Pod{a}, want: "a@1", sent: "changes +1 -"},
		{desc: "a pod without uid: whole, not kept", active: []*v1.Pod{a, {ObjectMeta: metav1.ObjectMeta{Name: "nouid"}}}, want: "a@1,nouid@", sent: "stateless 2"},
		{desc: "two pods", active: []*v1.Pod{a, b}, want: "a@1,b@1", sent: "changes +1 -"},
		{desc: "a uid twice, as many pods as before: whole, not kept", active: []*v1.Pod{a, a}, want: "a@1,a@1", sent: "stateless 2"},
		{desc: "changes again after those", active: []*v1.Pod{a, cc}, want: "a@1,c@1", sent: "changes +1 -uid-b"},
	}
	for _, s := range steps {
		if got := admitWith(t, c, s.active...); got != s.want {
			t.Errorf("%s: plugin saw %q, want %q", s.desc, got, s.want)
		}
		if got := shapes(w.take()); !slices.Equal(got, []string{s.sent}) {
			t.Errorf("%s: sent %q, want [%s]", s.desc, got, s.sent)
		}
	}
}

// TestActiveSetResync: a plugin that lost its sets (as a restarted one
// has) answers ActiveSetUnknown and is sent the whole set; changes follow
// again.
func TestActiveSetResync(t *testing.T) {
	srv := &grpcServer{impl: echo{}}
	c, w := newSetHarness(t, srv)
	a, b := setPod("a", "1"), setPod("b", "1")
	admitWith(t, c, a)
	admitWith(t, c, a, b)
	w.take()

	srv.sets = activeSets{}
	if got := admitWith(t, c, b); got != "b@1" {
		t.Errorf("after the plugin lost its sets, it saw %q, want b@1", got)
	}
	if got, want := shapes(w.take()), []string{"changes +0 -uid-a", "whole 1"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
	if got := admitWith(t, c, b, a); got != "a@1,b@1" {
		t.Errorf("plugin saw %q, want a@1,b@1", got)
	}
	if got, want := shapes(w.take()), []string{"changes +1 -"}; !slices.Equal(got, want) {
		t.Errorf("after the resync, sent %q, want %q", got, want)
	}
}

// oldPlugin is a plugin built on an SDK from before active sets, as its
// server saw requests: whole sets in active_pods, and a Describe that
// declares nothing.
type oldPlugin struct {
	pluginv1.UnimplementedAdmissionPluginServiceServer
}

func (oldPlugin) Admit(_ context.Context, in *pluginv1.AdmitRequest) (*pluginv1.AdmitResponse, error) {
	var pods []*v1.Pod
	for _, b := range in.GetActivePods() {
		p := &v1.Pod{}
		if err := p.Unmarshal(b); err != nil {
			return nil, err
		}
		pods = append(pods, p)
	}
	return &pluginv1.AdmitResponse{Admit: true, Message: names(pods)}, nil
}

func (oldPlugin) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	return &pluginv1.DescribeResponse{Name: "old"}, nil
}

func TestActiveSetOldPluginGetsWholeSets(t *testing.T) {
	c, w := newSetHarness(t, oldPlugin{})
	if c.KeepsActiveSets() {
		t.Fatal("KeepsActiveSets is true for a plugin that did not declare it")
	}
	a, b := setPod("a", "1"), setPod("b", "1")
	for _, active := range [][]*v1.Pod{{a}, {a}, {a, b}, {b}} {
		if got, want := admitWith(t, c, active...), names(active); got != want {
			t.Errorf("plugin saw %q, want %q", got, want)
		}
	}
	if got, want := shapes(w.take()), []string{"stateless 1", "stateless 1", "stateless 2", "stateless 1"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}

// TestActiveSetOldHost: a host from before active sets sends whole sets
// without active_set; the plugin uses them and keeps nothing.
func TestActiveSetOldHost(t *testing.T) {
	srv := &grpcServer{impl: echo{}}
	in, err := EncodeRequest(&Request{Pod: setPod("new", "1"), ActivePods: []*v1.Pod{setPod("a", "1")}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := srv.Admit(context.Background(), in)
	if err != nil || out.GetMessage() != "a@1" {
		t.Fatalf("Admit = %v, %v; want the whole set a@1", out, err)
	}
	if srv.sets.sets != nil {
		t.Errorf("the plugin kept %v from a host that keeps no sets", srv.sets.sets)
	}
}

func TestActiveSetRefusals(t *testing.T) {
	encode := func(pods ...*v1.Pod) [][]byte {
		var out [][]byte
		for _, p := range pods {
			b, err := p.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		return out
	}
	pod := encode(setPod("new", "1"))[0]
	tests := []struct {
		desc string
		in   *pluginv1.AdmitRequest
		want codes.Code
	}{
		{desc: "changes without a base", in: &pluginv1.AdmitRequest{Pod: pod, ActiveSet: &pluginv1.ActiveSet{Session: "s", Generation: 2, RemovedUids: []string{"uid-a"}}}, want: codes.InvalidArgument},
		{desc: "generation 0", in: &pluginv1.AdmitRequest{Pod: pod, ActiveSet: &pluginv1.ActiveSet{Session: "s"}}, want: codes.InvalidArgument},
		{desc: "unknown base", in: &pluginv1.AdmitRequest{Pod: pod, ActiveSet: &pluginv1.ActiveSet{Session: "s", BaseGeneration: 7, Generation: 8}}, want: codes.FailedPrecondition},
		{desc: "other session", in: &pluginv1.AdmitRequest{Pod: pod, ActiveSet: &pluginv1.ActiveSet{Session: "t", BaseGeneration: 1, Generation: 2}}, want: codes.FailedPrecondition},
		{desc: "active pods beside a base", in: &pluginv1.AdmitRequest{Pod: pod, ActivePods: encode(setPod("x", "1")), ActiveSet: &pluginv1.ActiveSet{Session: "s", BaseGeneration: 1, Generation: 2}}, want: codes.InvalidArgument},
		{desc: "changes in the same generation", in: &pluginv1.AdmitRequest{Pod: pod, ActiveSet: &pluginv1.ActiveSet{Session: "s", BaseGeneration: 1, Generation: 1, RemovedUids: []string{"uid-a"}}}, want: codes.InvalidArgument},
		{desc: "removing a pod not in the base", in: &pluginv1.AdmitRequest{Pod: pod, ActiveSet: &pluginv1.ActiveSet{Session: "s", BaseGeneration: 1, Generation: 2, RemovedUids: []string{"uid-x"}}}, want: codes.InvalidArgument},
		{desc: "a changed pod without uid", in: &pluginv1.AdmitRequest{Pod: pod, ActiveSet: &pluginv1.ActiveSet{Session: "s", BaseGeneration: 1, Generation: 2, ChangedPods: encode(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}})}}, want: codes.InvalidArgument},
		{desc: "a pod changed twice", in: &pluginv1.AdmitRequest{Pod: pod, ActiveSet: &pluginv1.ActiveSet{Session: "s", BaseGeneration: 1, Generation: 2, ChangedPods: encode(setPod("x", "1"), setPod("x", "2"))}}, want: codes.InvalidArgument},
		{desc: "changed and removed", in: &pluginv1.AdmitRequest{Pod: pod, ActiveSet: &pluginv1.ActiveSet{Session: "s", BaseGeneration: 1, Generation: 2, ChangedPods: encode(setPod("a", "2")), RemovedUids: []string{"uid-a"}}}, want: codes.InvalidArgument},
		{desc: "an undecodable changed pod", in: &pluginv1.AdmitRequest{Pod: pod, ActiveSet: &pluginv1.ActiveSet{Session: "s", BaseGeneration: 1, Generation: 2, ChangedPods: [][]byte{{0xff, 0xff}}}}, want: codes.InvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			srv := &grpcServer{impl: echo{}}
			base := &pluginv1.AdmitRequest{Pod: pod, ActivePods: encode(setPod("a", "1")), ActiveSet: &pluginv1.ActiveSet{Session: "s", Generation: 1}}
			if _, err := srv.Admit(context.Background(), base); err != nil {
				t.Fatal(err)
			}
			_, err := srv.Admit(context.Background(), tc.in)
			if got := status.Code(err); got != tc.want {
				t.Fatalf("code %v (%v), want %v", got, err, tc.want)
			}
			if got := isActiveSetUnknown(err); got != (tc.want == codes.FailedPrecondition) {
				t.Errorf("isActiveSetUnknown = %v for %v", got, err)
			}
			// A refused request leaves the plugin's sets as they were.
			if got := names(srv.sets.sets[1]); got != "a@1" || len(srv.sets.sets) != 1 {
				t.Errorf("sets after the refusal: %v, want only generation 1 (a@1)", srv.sets.sets)
			}
		})
	}
}

// TestActiveSetsKeepLatestGenerations: the plugin forgets the oldest
// generations beyond keptGenerations, and a whole set of another session
// replaces the previous session's.
func TestActiveSetsKeepLatestGenerations(t *testing.T) {
	var a activeSets
	for g := uint64(1); g <= keptGenerations+2; g++ {
		a.put("s", g, []*v1.Pod{setPod(fmt.Sprint(g), "1")})
	}
	for g := uint64(1); g <= keptGenerations+2; g++ {
		_, ok := a.get("s", g)
		if want := g > 2; ok != want {
			t.Errorf("generation %d held: %v, want %v", g, ok, want)
		}
	}
	a.put("t", 1, nil)
	if _, ok := a.get("s", keptGenerations+2); ok {
		t.Error("a set of the previous session is still held after a new session's whole set")
	}
}

// TestActiveSetConcurrentCalls: calls in flight at once, each with its own
// set, all see exactly their set, whatever the order in which they reach
// the plugin (run with -race).
func TestActiveSetConcurrentCalls(t *testing.T) {
	c, _ := newSetHarness(t, &grpcServer{impl: echo{}})
	sets := [][]*v1.Pod{
		{setPod("a", "1"), setPod("b", "1")},
		{setPod("a", "1"), setPod("b", "2")},
		{setPod("b", "2"), setPod("c", "1")},
		{setPod("c", "1")},
		nil,
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*40)
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				active := sets[(g+i)%len(sets)]
				resp, err := c.Admit(context.Background(), &Request{Pod: setPod("new", "1"), ActivePods: active})
				if err != nil {
					errs <- err
					continue
				}
				if want := names(active); resp.Message != want {
					errs <- fmt.Errorf("goroutine %d call %d: plugin saw %q, want %q", g, i, resp.Message, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
