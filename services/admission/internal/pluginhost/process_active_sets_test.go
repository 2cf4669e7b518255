package pluginhost

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// wireRecorder records the AdmitRequests the host sends its plugins, as a
// client interceptor on the plugin connections (Options.GRPCDialOptions).
type wireRecorder struct {
	mu   sync.Mutex
	sent []*pluginv1.AdmitRequest
}

func (w *wireRecorder) dialOption() grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if in, ok := req.(*pluginv1.AdmitRequest); ok {
			w.mu.Lock()
			w.sent = append(w.sent, proto.Clone(in).(*pluginv1.AdmitRequest))
			w.mu.Unlock()
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
}

// take summarises the requests sent since the last take: "whole N" (the
// whole set, kept by the plugin), "changes +N -uid,uid" or "stateless N"
// (the whole set, not kept).
func (w *wireRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, in := range w.sent {
		set := in.GetActiveSet()
		switch {
		case set == nil:
			out = append(out, fmt.Sprintf("stateless %d", len(in.GetActivePods())))
		case set.GetBaseGeneration() == 0:
			out = append(out, fmt.Sprintf("whole %d", len(in.GetActivePods())))
		default:
			out = append(out, fmt.Sprintf("changes +%d -%s", len(set.GetChangedPods()), strings.Join(set.GetRemovedUids(), ",")))
		}
	}
	w.sent = nil
	return out
}

func versioned(name, rv string) *v1.Pod {
	p := testPod(name, "registry.local/app")
	p.ResourceVersion = rv
	return p
}

// echoed admits through c, whose plugin is testplugin in an echo mode, and
// returns the active set the plugin was handed.
func echoed(t *testing.T, c *Chain, active ...*v1.Pod) string {
	t.Helper()
	res := c.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: testPod("new", "registry.local/app"), OtherPods: active})
	prefix := `admission plugin "echo": `
	if res.Reason != "Echo" || !strings.HasPrefix(res.Message, prefix) {
		t.Fatalf("Admit = %+v, want the echo plugin's answer", res)
	}
	return strings.TrimPrefix(res.Message, prefix)
}

// TestProcessActiveSetChanges: a plugin child built on the SDK is sent the
// whole active set once, then only changes, and always sees the exact set;
// a restarted child gets the whole set again.
func TestProcessActiveSetChanges(t *testing.T) {
	_, testplugin := pluginBinaries(t)
	cfg := writeConfig(t, PluginConfig{
		Name: "echo", Path: testplugin, SHA256: sha256File(t, testplugin),
		Env: map[string]string{"SPLITLET_TESTPLUGIN_MODE": "echo"},
	})
	w := &wireRecorder{}
	c := newRealChain(t, cfg, Options{GRPCDialOptions: []grpc.DialOption{w.dialOption()}})
	a, b, cc := versioned("a", "1"), versioned("b", "1"), versioned("c", "1")

	steps := []struct {
		desc   string
		active []*v1.Pod
		want   string
		sent   string
	}{
		{desc: "first call", active: []*v1.Pod{a, b}, want: "a@1,b@1", sent: "whole 2"},
		{desc: "unchanged", active: []*v1.Pod{a, b}, want: "a@1,b@1", sent: "changes +0 -"},
		{desc: "added", active: []*v1.Pod{a, b, cc}, want: "a@1,b@1,c@1", sent: "changes +1 -"},
		{desc: "removed", active: []*v1.Pod{a, cc}, want: "a@1,c@1", sent: "changes +0 -uid-b"},
		{desc: "updated", active: []*v1.Pod{a, versioned("c", "2")}, want: "a@1,c@2", sent: "changes +1 -"},
	}
	for _, s := range steps {
		if got := echoed(t, c, s.active...); got != s.want {
			t.Errorf("%s: plugin saw %q, want %q", s.desc, got, s.want)
		}
		if got := w.take(); !slices.Equal(got, []string{s.sent}) {
			t.Errorf("%s: sent %q, want [%s]", s.desc, got, s.sent)
		}
	}

	killAndWait(t, c.plugins[0])
	if got := echoed(t, c, a, b); got != "a@1,b@1" {
		t.Errorf("after a restart: plugin saw %q, want a@1,b@1", got)
	}
	if got, want := w.take(), []string{"whole 2"}; !slices.Equal(got, want) {
		t.Errorf("after a restart: sent %q, want %q", got, want)
	}
	if got := echoed(t, c, b); got != "b@1" {
		t.Errorf("after a restart: plugin saw %q, want b@1", got)
	}
	if got, want := w.take(), []string{"changes +0 -uid-a"}; !slices.Equal(got, want) {
		t.Errorf("after a restart: sent %q, want %q", got, want)
	}
}

// TestProcessOldSDKPluginGetsWholeSets: a plugin built on the SDK from
// before active sets declares nothing in Describe and is sent the whole set
// on every call.
func TestProcessOldSDKPluginGetsWholeSets(t *testing.T) {
	_, testplugin := pluginBinaries(t)
	cfg := writeConfig(t, PluginConfig{
		Name: "echo", Path: testplugin, SHA256: sha256File(t, testplugin),
		Env: map[string]string{"SPLITLET_TESTPLUGIN_MODE": "oldsdk"},
	})
	w := &wireRecorder{}
	c := newRealChain(t, cfg, Options{GRPCDialOptions: []grpc.DialOption{w.dialOption()}})
	a, b := versioned("a", "1"), versioned("b", "1")
	for _, active := range [][]*v1.Pod{{a, b}, {a, b}, {b}, {b, versioned("a", "2")}} {
		var want []string
		for _, p := range active {
			want = append(want, p.Name+"@"+p.ResourceVersion)
		}
		slices.Sort(want)
		if got := echoed(t, c, active...); got != strings.Join(want, ",") {
			t.Errorf("plugin saw %q, want %q", got, strings.Join(want, ","))
		}
	}
	if got, want := w.take(), []string{"stateless 2", "stateless 2", "stateless 1", "stateless 2"}; !slices.Equal(got, want) {
		t.Errorf("sent %q, want %q", got, want)
	}
}
