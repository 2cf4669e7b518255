package admitter

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// fakeEviction is a hand-written EvictionManager with fixed pressure.
type fakeEviction struct {
	pressure []v1.NodeConditionType
}

var _ EvictionManager = (*fakeEviction)(nil)

func (f *fakeEviction) NodeConditions(context.Context) []v1.NodeConditionType {
	return slices.Clone(f.pressure)
}

func (f *fakeEviction) Conditions() []v1.NodeCondition {
	var out []v1.NodeCondition
	for _, t := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		status := v1.ConditionFalse
		if slices.Contains(f.pressure, t) {
			status = v1.ConditionTrue
		}
		out = append(out, v1.NodeCondition{Type: t, Status: status, Reason: "fake"})
	}
	return out
}

// fakePlugin rejects pods whose name is in reject and counts its calls.
type fakePlugin struct {
	reject map[string]bool
	calls  int
}

var _ lifecycle.PodAdmitHandler = (*fakePlugin)(nil)

func (f *fakePlugin) Admit(_ context.Context, attrs *lifecycle.PodAdmitAttributes) lifecycle.PodAdmitResult {
	f.calls++
	if f.reject[attrs.Pod.Name] {
		return lifecycle.PodAdmitResult{Reason: "PluginSaysNo", Message: "fake plugin rejected " + attrs.Pod.Name}
	}
	return lifecycle.PodAdmitResult{Admit: true}
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestAdmit(t *testing.T) {
	tp := testfixture.Pod
	tests := []struct {
		desc        string
		pressure    []v1.NodeConditionType
		pluginRejct []string
		pod         *v1.Pod
		active      []*v1.Pod
		wantAdmit   bool
		wantReason  string
		wantVictims []string
		// wantPluginCalls is how often the plugin must have been asked;
		// -1 skips the check.
		wantPluginCalls int
	}{
		{
			desc: "fits", pod: tp("web", "500m", "256Mi"), active: []*v1.Pod{tp("db", "1", "512Mi")},
			wantAdmit: true, wantPluginCalls: 1,
		},
		{
			desc: "more memory than allocatable", pod: tp("big", "100m", "2Gi"),
			wantReason: lifecycle.OutOfMemory, wantPluginCalls: 0,
		},
		{
			desc: "cpu used up by active pods", pod: tp("web", "1500m", ""), active: []*v1.Pod{tp("db", "1", "")},
			wantReason: lifecycle.OutOfCPU, wantPluginCalls: 0,
		},
		{
			desc: "node selector mismatch", pod: testfixture.WithNodeSelector(tp("web", "", ""), map[string]string{"zone": "b"}),
			wantReason: "NodeAffinity", wantPluginCalls: 0,
		},
		{
			desc:     "eviction admission runs before predicates",
			pressure: []v1.NodeConditionType{v1.NodeDiskPressure}, pod: tp("big", "100m", "2Gi"),
			wantReason: "Evicted", wantPluginCalls: 0,
		},
		{
			desc:       "critical pod on a node full of pods gets the BestEffort pod as victim",
			pod:        testfixture.Critical(tp("dns", "", "")),
			active:     testfixture.FullOfPods(),
			wantReason: lifecycle.OutOfPods, wantVictims: []string{"besteffort"}, wantPluginCalls: 1,
		},
		{
			desc:       "critical pod short of memory: fewest victims that free enough",
			pod:        testfixture.Critical(tp("dns", "", "800Mi")),
			active:     []*v1.Pod{tp("small", "100m", "100Mi"), tp("besteffort", "", ""), tp("large", "100m", "800Mi")},
			wantReason: lifecycle.OutOfMemory, wantVictims: []string{"large"}, wantPluginCalls: 1,
		},
		{
			desc:        "no victims when a plugin would reject the critical pod anyway",
			pluginRejct: []string{"dns"},
			pod:         testfixture.Critical(tp("dns", "", "800Mi")),
			active:      []*v1.Pod{tp("a", "100m", "300Mi"), tp("b", "100m", "600Mi")},
			wantReason:  "PluginSaysNo", wantPluginCalls: 1,
		},
		{
			desc: "plugin runs last and its rejection stands", pluginRejct: []string{"web"},
			pod: tp("web", "", ""), wantReason: "PluginSaysNo", wantPluginCalls: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			plugin := &fakePlugin{reject: map[string]bool{}}
			for _, n := range tc.pluginRejct {
				plugin.reject[n] = true
			}
			a, err := New(Options{
				Node:     testfixture.Node(),
				Eviction: &fakeEviction{pressure: tc.pressure},
				Plugins:  plugin,
			})
			if err != nil {
				t.Fatal(err)
			}
			res := a.Admit(context.Background(), tc.pod, tc.active)
			if res.Admit != tc.wantAdmit || res.Reason != tc.wantReason {
				t.Fatalf("Admit = %v reason %q (%s), want %v reason %q", res.Admit, res.Reason, res.Message, tc.wantAdmit, tc.wantReason)
			}
			if got := names(res.Victims); !slices.Equal(got, tc.wantVictims) {
				t.Errorf("victims = %v, want %v", got, tc.wantVictims)
			}
			if tc.wantPluginCalls >= 0 && plugin.calls != tc.wantPluginCalls {
				t.Errorf("plugin called %d times, want %d", plugin.calls, tc.wantPluginCalls)
			}
		})
	}
}

func TestActivePods(t *testing.T) {
	a, err := New(Options{Node: testfixture.Node()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := testfixture.Pod("db", "100m", "")
	a.Admit(ctx, testfixture.Pod("web", "", ""), []*v1.Pod{db})
	if got := names(a.ActivePods()); !slices.Equal(got, []string{"db", "web"}) {
		t.Errorf("after admitting web: active = %v, want [db web]", got)
	}
	a.Admit(ctx, testfixture.Pod("huge", "", "5Gi"), []*v1.Pod{db})
	if got := names(a.ActivePods()); !slices.Equal(got, []string{"db"}) {
		t.Errorf("after rejecting huge: active = %v, want [db]", got)
	}
}

func TestNodeConditions(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		desc     string
		eviction EvictionManager
		want     map[v1.NodeConditionType]v1.ConditionStatus
		wantWhy  string
	}{
		{
			desc: "no eviction manager: no pressure",
			want: map[v1.NodeConditionType]v1.ConditionStatus{
				v1.NodeMemoryPressure: v1.ConditionFalse, v1.NodeDiskPressure: v1.ConditionFalse, v1.NodePIDPressure: v1.ConditionFalse,
			},
			wantWhy: "KubeletHasSufficientMemory",
		},
		{
			desc:     "eviction manager's conditions",
			eviction: &fakeEviction{pressure: []v1.NodeConditionType{v1.NodeDiskPressure}},
			want: map[v1.NodeConditionType]v1.ConditionStatus{
				v1.NodeMemoryPressure: v1.ConditionFalse, v1.NodeDiskPressure: v1.ConditionTrue, v1.NodePIDPressure: v1.ConditionFalse,
			},
			wantWhy: "fake",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			base := testfixture.Node()
			// A condition of another owner must survive the merge.
			base.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
			a, err := New(Options{Node: base, Eviction: tc.eviction, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			for _, get := range []struct {
				name string
				node func(context.Context) (*v1.Node, error)
			}{{"Node", a.Node}, {"NodeView", a.NodeView}} {
				node, err := get.node(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				checkConditions(t, get.name, node, tc.want, tc.wantWhy, tc.eviction == nil, now)
			}
			// Neither changed the node admission keeps.
			if kept, _ := a.node.Shared(context.Background()); len(kept.Status.Conditions) != 1 {
				t.Errorf("the kept node's conditions became %v", kept.Status.Conditions)
			}
		})
	}
}

func checkConditions(t *testing.T, name string, node *v1.Node, want map[v1.NodeConditionType]v1.ConditionStatus, wantWhy string, heartbeatNow bool, now time.Time) {
	t.Helper()
	got := map[v1.NodeConditionType]v1.ConditionStatus{}
	for _, c := range node.Status.Conditions {
		got[c.Type] = c.Status
		if c.Type == v1.NodeMemoryPressure && c.Reason != wantWhy {
			t.Errorf("%s: MemoryPressure reason = %q, want %q", name, c.Reason, wantWhy)
		}
		if heartbeatNow && c.Type != v1.NodeReady && !c.LastHeartbeatTime.Equal(&metav1.Time{Time: now}) {
			t.Errorf("%s: %s heartbeat = %v, want %v", name, c.Type, c.LastHeartbeatTime, now)
		}
	}
	if got[v1.NodeReady] != v1.ConditionTrue {
		t.Errorf("%s: Ready condition lost: %v", name, node.Status.Conditions)
	}
	delete(got, v1.NodeReady)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", name, k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: conditions %v, want %v", name, got, want)
	}
}

func TestNewRequiresNode(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without a node succeeded")
	}
}
