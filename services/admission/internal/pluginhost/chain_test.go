package pluginhost

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/admission/lifecycle"
	sdk "github.com/splitlet/splitlet/services/admission/plugin"
)

// scripted is a hand-written fake plugin: it answers with resp or err, after
// sleep, and counts its calls and remembers the last request.
type scripted struct {
	resp  *sdk.Response
	err   error
	sleep time.Duration

	calls atomic.Int32
	mu    sync.Mutex
	last  *sdk.Request
}

func (s *scripted) Admit(ctx context.Context, r *sdk.Request) (*sdk.Response, error) {
	s.calls.Add(1)
	s.mu.Lock()
	s.last = r
	s.mu.Unlock()
	if s.sleep > 0 {
		select {
		case <-time.After(s.sleep):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.resp, s.err
}

func admitting() *scripted { return &scripted{resp: &sdk.Response{Admit: true}} }

// fakeLauncher starts "processes" that are the SDK's in-process gRPC
// harness, so the chain's logic is tested across the real gRPC adapters
// without building binaries. kill and crash mark the process gone.
type fakeLauncher struct {
	t    testing.TB
	impl sdk.AdmissionPlugin
	err  error // returned by every launch when set

	mu     sync.Mutex
	starts int
	gone   *atomic.Bool // of the latest instance
}

func (f *fakeLauncher) launch(context.Context) (*instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts++
	if f.err != nil {
		return nil, f.err
	}
	gone := &atomic.Bool{}
	f.gone = gone
	return &instance{
		plugin: sdk.TestClient(f.t, f.impl),
		pid:    1000 + f.starts,
		exited: gone.Load,
		kill:   func() { gone.Store(true) },
	}, nil
}

func (f *fakeLauncher) crash() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone.Store(true)
}

func (f *fakeLauncher) startCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts
}

type fakePlugin struct {
	name    string
	policy  FailurePolicy
	timeout time.Duration
	impl    *scripted
	err     error // launch error
}

func newTestChain(t *testing.T, plugins []fakePlugin) (*Chain, []*fakeLauncher) {
	t.Helper()
	c := &Chain{}
	var launchers []*fakeLauncher
	for _, fp := range plugins {
		timeout := fp.timeout
		if timeout == 0 {
			timeout = 5 * time.Second
		}
		policy := fp.policy
		if policy == "" {
			policy = Fail
		}
		l := &fakeLauncher{t: t, impl: fp.impl, err: fp.err}
		cfg := PluginConfig{Name: fp.name, FailurePolicy: policy, Timeout: Duration(timeout)}
		c.plugins = append(c.plugins, newHostPlugin(cfg, zap.NewNop(), l.launch, Options{}.withDefaults()))
		launchers = append(launchers, l)
	}
	t.Cleanup(func() { c.Close() })
	return c, launchers
}

func testPod(name string, images ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}}
	for _, img := range images {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c" + img, Image: img})
	}
	return p
}

func TestChainAdmit(t *testing.T) {
	boom := errors.New("policy store down")
	tests := []struct {
		desc    string
		plugins []fakePlugin
		// wantAdmit, wantReason and wantInMessage describe the result.
		wantAdmit     bool
		wantReason    string
		wantInMessage []string
		// wantCalls is each plugin's call count.
		wantCalls []int32
	}{
		{desc: "no plugins admit", wantAdmit: true},
		{
			desc:      "every plugin admits",
			plugins:   []fakePlugin{{name: "a", impl: admitting()}, {name: "b", impl: admitting()}},
			wantAdmit: true, wantCalls: []int32{1, 1},
		},
		{
			desc: "first rejection wins and later plugins are not asked",
			plugins: []fakePlugin{
				{name: "a", impl: admitting()},
				{name: "b", impl: &scripted{resp: &sdk.Response{Reason: "ImageNotAllowed", Message: `container "c" uses image "x"`}}},
				{name: "c", impl: &scripted{resp: &sdk.Response{Reason: "Other"}}},
			},
			wantReason: "ImageNotAllowed", wantInMessage: []string{`admission plugin "b"`, `container "c" uses image "x"`},
			wantCalls: []int32{1, 1, 0},
		},
		{
			desc:       "rejection without reason gets a default",
			plugins:    []fakePlugin{{name: "a", impl: &scripted{resp: &sdk.Response{Message: "no"}}}},
			wantReason: ReasonPluginRejected, wantInMessage: []string{`admission plugin "a": no`},
			wantCalls: []int32{1},
		},
		{
			desc:       "error with Fail rejects and stops the chain",
			plugins:    []fakePlugin{{name: "a", impl: &scripted{err: boom}}, {name: "b", impl: admitting()}},
			wantReason: ReasonPluginError, wantInMessage: []string{`admission plugin "a" failed`, "policy store down"},
			wantCalls: []int32{1, 0},
		},
		{
			desc: "error with Ignore admits and the chain goes on",
			plugins: []fakePlugin{
				{name: "a", policy: Ignore, impl: &scripted{err: boom}},
				{name: "b", impl: &scripted{resp: &sdk.Response{Reason: "FromB"}}},
			},
			wantReason: "FromB", wantCalls: []int32{1, 1},
		},
		{
			desc:       "timeout with Fail rejects",
			plugins:    []fakePlugin{{name: "slow", timeout: 50 * time.Millisecond, impl: &scripted{sleep: 5 * time.Second, resp: &sdk.Response{Admit: true}}}},
			wantReason: ReasonPluginError, wantInMessage: []string{`"slow"`, "DeadlineExceeded"},
			wantCalls: []int32{1},
		},
		{
			desc:      "timeout with Ignore admits",
			plugins:   []fakePlugin{{name: "slow", policy: Ignore, timeout: 50 * time.Millisecond, impl: &scripted{sleep: 5 * time.Second, resp: &sdk.Response{Admit: true}}}},
			wantAdmit: true, wantCalls: []int32{1},
		},
		{
			desc:       "start failure with Fail rejects",
			plugins:    []fakePlugin{{name: "a", impl: admitting(), err: errors.New("plugin exited before we could connect")}},
			wantReason: ReasonPluginError, wantInMessage: []string{"exited before we could connect"},
			wantCalls: []int32{0},
		},
		{
			desc:      "start failure with Ignore admits",
			plugins:   []fakePlugin{{name: "a", policy: Ignore, impl: admitting(), err: errors.New("exec format error")}},
			wantAdmit: true, wantCalls: []int32{0},
		},
		{
			desc: "changed binary with Fail rejects naming the sums",
			plugins: []fakePlugin{{name: "a", impl: admitting(), err: &ChecksumMismatchError{
				Plugin: "a", Path: "/opt/a", Expected: "aaaa", Actual: "bbbb"}}},
			wantReason: ReasonPluginError, wantInMessage: []string{"/opt/a", "aaaa", "bbbb", "refusing to start a changed binary"},
			wantCalls: []int32{0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			c, _ := newTestChain(t, tc.plugins)
			res := c.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: testPod("p", "img")})
			if res.Admit != tc.wantAdmit || res.Reason != tc.wantReason {
				t.Errorf("Admit = %+v, want admit=%v reason=%q", res, tc.wantAdmit, tc.wantReason)
			}
			for _, s := range tc.wantInMessage {
				if !strings.Contains(res.Message, s) {
					t.Errorf("message %q does not contain %q", res.Message, s)
				}
			}
			for i, want := range tc.wantCalls {
				if got := tc.plugins[i].impl.calls.Load(); got != want {
					t.Errorf("plugin %q called %d times, want %d", tc.plugins[i].name, got, want)
				}
			}
		})
	}
}

// TestChainSendsPodsAndNode checks what a plugin receives: the pod, the
// other active pods and the node from GetNode.
func TestChainSendsPodsAndNode(t *testing.T) {
	impl := admitting()
	c, _ := newTestChain(t, []fakePlugin{{name: "a", impl: impl}})
	c.getNode = func(context.Context) (*v1.Node, error) {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, nil
	}
	active := []*v1.Pod{testPod("a1", "x"), testPod("a2", "y")}
	if res := c.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: testPod("new", "z"), OtherPods: active}); !res.Admit {
		t.Fatalf("Admit = %+v", res)
	}
	impl.mu.Lock()
	got := impl.last
	impl.mu.Unlock()
	if got.Pod.Name != "new" || len(got.ActivePods) != 2 || got.ActivePods[0].Name != "a1" || got.ActivePods[1].Name != "a2" {
		t.Errorf("plugin saw pod %q and %d active pods, want new and [a1 a2]", got.Pod.Name, len(got.ActivePods))
	}
	if got.Node == nil || got.Node.Name != "node-1" {
		t.Errorf("plugin saw node %v, want node-1", got.Node)
	}
}

func TestChainRestartsExitedPlugin(t *testing.T) {
	impl := admitting()
	c, ls := newTestChain(t, []fakePlugin{{name: "a", impl: impl}})
	attrs := &lifecycle.PodAdmitAttributes{Pod: testPod("p", "img")}
	if res := c.Admit(context.Background(), attrs); !res.Admit {
		t.Fatalf("first Admit = %+v", res)
	}
	ls[0].crash()
	if res := c.Admit(context.Background(), attrs); !res.Admit {
		t.Fatalf("Admit after crash = %+v, want the plugin restarted and admitting", res)
	}
	if n := ls[0].startCount(); n != 2 {
		t.Errorf("plugin started %d times, want 2", n)
	}
	if n := impl.calls.Load(); n != 2 {
		t.Errorf("plugin asked %d times, want 2", n)
	}
}

// TestChainBackoff checks that a plugin that keeps failing to start is not
// started on every admission.
func TestChainBackoff(t *testing.T) {
	c, ls := newTestChain(t, []fakePlugin{{name: "a", impl: admitting(), err: errors.New("exits at once")}})
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c.plugins[0].now = func() time.Time { return now }
	attrs := &lifecycle.PodAdmitAttributes{Pod: testPod("p", "img")}
	admitN := func(n int) (last lifecycle.PodAdmitResult) {
		for range n {
			last = c.Admit(context.Background(), attrs)
		}
		return last
	}

	// Initial start and one immediate retry; then the back-off holds.
	res := admitN(10)
	if n := ls[0].startCount(); n != 2 {
		t.Fatalf("10 admissions started the plugin %d times, want 2", n)
	}
	if res.Admit || !strings.Contains(res.Message, "next start in") {
		t.Errorf("Admit during back-off = %+v, want a rejection naming the back-off", res)
	}
	now = now.Add(DefaultRestartBackoff)
	admitN(10)
	if n := ls[0].startCount(); n != 3 {
		t.Fatalf("after the first back-off the plugin started %d times in all, want 3", n)
	}
	now = now.Add(DefaultRestartBackoff) // the second wait is twice as long
	admitN(10)
	if n := ls[0].startCount(); n != 3 {
		t.Fatalf("before the doubled back-off elapsed the plugin started %d times in all, want 3", n)
	}
	now = now.Add(DefaultRestartBackoff)
	admitN(10)
	if n := ls[0].startCount(); n != 4 {
		t.Fatalf("after the doubled back-off the plugin started %d times in all, want 4", n)
	}
}

// rejectAll is a built-in handler stand-in.
type rejectAll struct{}

func (rejectAll) Admit(context.Context, *lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult {
	return lifecycle.PodAdmitResult{Reason: "OutOfcpu", Message: "built-in said no"}
}

type admitAll struct{}

func (admitAll) Admit(context.Context, *lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult {
	return lifecycle.PodAdmitResult{Admit: true}
}

// TestChainInLifecycleChain places the plugin chain after built-in handlers
// in a lifecycle.Chain, as the admission service does.
func TestChainInLifecycleChain(t *testing.T) {
	tests := []struct {
		desc       string
		builtin    lifecycle.PodAdmitHandler
		wantReason string
		wantCalls  int32
	}{
		{desc: "built-in rejection stops before the plugins", builtin: rejectAll{}, wantReason: "OutOfcpu", wantCalls: 0},
		{desc: "plugins decide after built-ins admit", builtin: admitAll{}, wantReason: "ImageNotAllowed", wantCalls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			impl := &scripted{resp: &sdk.Response{Reason: "ImageNotAllowed"}}
			plugins, _ := newTestChain(t, []fakePlugin{{name: "a", impl: impl}})
			chain := lifecycle.Chain{tc.builtin, plugins}
			res := chain.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: testPod("p", "img")})
			if res.Admit || res.Reason != tc.wantReason {
				t.Errorf("Admit = %+v, want reason %q", res, tc.wantReason)
			}
			if n := impl.calls.Load(); n != tc.wantCalls {
				t.Errorf("plugin asked %d times, want %d", n, tc.wantCalls)
			}
		})
	}
}

func TestChainAfterClose(t *testing.T) {
	c, _ := newTestChain(t, []fakePlugin{{name: "a", impl: admitting()}})
	c.Close()
	res := c.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: testPod("p", "img")})
	if res.Admit || res.Reason != ReasonPluginError || !strings.Contains(res.Message, "closed") {
		t.Errorf("Admit after Close = %+v, want a fail-closed rejection saying the host is closed", res)
	}
}
