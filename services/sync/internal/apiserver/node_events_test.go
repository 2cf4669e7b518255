package apiserver

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// recordedEvents is a NodeEventRecorder keeping "type reason: message".
type recordedEvents struct {
	mu  sync.Mutex
	evs []string
}

func (r *recordedEvents) Event(eventType, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, eventType+" "+reason+": "+message)
}

// take returns the events recorded since the last take.
func (r *recordedEvents) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.evs
	r.evs = nil
	return out
}

func TestConditionEvents(t *testing.T) {
	cond := func(typ v1.NodeConditionType, s v1.ConditionStatus) v1.NodeCondition {
		return v1.NodeCondition{Type: typ, Status: s}
	}
	f, tr := v1.ConditionFalse, v1.ConditionTrue
	for _, tc := range []struct {
		desc      string
		prev, cur []v1.NodeCondition
		want      []string
	}{
		{
			desc: "a new node: each pressure condition, not Ready",
			cur:  []v1.NodeCondition{cond(v1.NodeReady, tr), cond(v1.NodeMemoryPressure, f), cond(v1.NodeDiskPressure, f), cond(v1.NodePIDPressure, f)},
			want: []string{"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"},
		},
		{
			desc: "nothing changed",
			prev: []v1.NodeCondition{cond(v1.NodeReady, tr), cond(v1.NodeMemoryPressure, f)},
			cur:  []v1.NodeCondition{cond(v1.NodeReady, tr), cond(v1.NodeMemoryPressure, f)},
		},
		{
			desc: "pressure on, Ready lost",
			prev: []v1.NodeCondition{cond(v1.NodeReady, tr), cond(v1.NodeMemoryPressure, f), cond(v1.NodeDiskPressure, f), cond(v1.NodePIDPressure, f)},
			cur:  []v1.NodeCondition{cond(v1.NodeReady, f), cond(v1.NodeMemoryPressure, tr), cond(v1.NodeDiskPressure, tr), cond(v1.NodePIDPressure, tr)},
			want: []string{"NodeNotReady", "NodeHasInsufficientMemory", "NodeHasDiskPressure", "NodeHasInsufficientPID"},
		},
		{
			desc: "Ready back; an Unknown pressure and other conditions record nothing",
			prev: []v1.NodeCondition{cond(v1.NodeReady, f), cond(v1.NodeMemoryPressure, f)},
			cur:  []v1.NodeCondition{cond(v1.NodeReady, tr), cond(v1.NodeMemoryPressure, v1.ConditionUnknown), cond(v1.NodeNetworkUnavailable, tr)},
			want: []string{"NodeReady"},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := conditionEvents(tc.prev, tc.cur); !slices.Equal(got, tc.want) {
				t.Fatalf("events %v, want %v", got, tc.want)
			}
		})
	}
}

// The registrar records the kubelet's status events: the pressure
// conditions of a newly registered node, then only their changes, Ready's
// changes, and a boot ID other than the node's, once.
func TestRegistrarRecordsStatusEvents(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	rec := &recordedEvents{}
	var pressure atomic.Bool
	rep := func(context.Context) (NodeReport, error) {
		s := v1.ConditionFalse
		if pressure.Load() {
			s = v1.ConditionTrue
		}
		return NodeReport{Conditions: []v1.NodeCondition{{Type: v1.NodeMemoryPressure, Status: s}, {Type: v1.NodeDiskPressure, Status: v1.ConditionFalse}}}, nil
	}
	rt := &fakeRuntime{podCIDRs: []string{"10.244.0.0/24"}}
	clock := time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC)
	opts := NodeOptions{Name: "n1", Report: rep, Runtime: rt, Events: rec, Now: func() time.Time { return clock },
		SystemInfo: v1.NodeSystemInfo{BootID: "boot-1"}}
	r := NewNodeRegistrar(client, opts)
	if err := r.Register(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"Normal NodeHasSufficientMemory: Node n1 status is now: NodeHasSufficientMemory",
		"Normal NodeHasNoDiskPressure: Node n1 status is now: NodeHasNoDiskPressure"}
	if got := rec.take(); !slices.Equal(got, want) {
		t.Fatalf("at registration: %q, want %q", got, want)
	}
	if err := r.UpdateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("unchanged status: %q, want no event", got)
	}

	pressure.Store(true)
	rt.setStatusErr(errors.New("connection refused"))
	clock = clock.Add(runtimeSyncThreshold)
	if err := r.UpdateStatus(ctx); err != nil {
		t.Fatal(err)
	}
	want = []string{"Normal NodeNotReady: Node n1 status is now: NodeNotReady",
		"Normal NodeHasInsufficientMemory: Node n1 status is now: NodeHasInsufficientMemory"}
	if got := rec.take(); !slices.Equal(got, want) {
		t.Fatalf("after the runtime left and memory ran short: %q, want %q", got, want)
	}

	// A sync started after a reboot registers the same node with a new
	// boot ID: Rebooted, once.
	opts.SystemInfo.BootID = "boot-2"
	r = NewNodeRegistrar(client, opts)
	rt.setStatusErr(nil)
	for range 2 {
		if err := r.UpdateStatus(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := rec.take()
	if !slices.Contains(got, "Warning Rebooted: Node n1 has been rebooted, boot id: boot-2") || slices.Contains(got[1:], got[0]) {
		t.Fatalf("after a reboot: %q, want one Rebooted event", got)
	}
}

// NodeEvents creates each event against the kubelet's nodeRef, retrying
// while the API server fails.
func TestNodeEventsWrites(t *testing.T) {
	client := fake.NewClientset()
	var failures atomic.Int32
	failures.Store(2)
	client.PrependReactor("create", "events", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures.Add(-1) >= 0 {
			return true, nil, apierrors.NewServiceUnavailable("etcd is away")
		}
		return false, nil, nil
	})
	e := NewNodeEvents(client, "n1")
	e.retry = time.Millisecond
	e.now = func() time.Time { return time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC) }
	e.Event(v1.EventTypeNormal, NodeStarting, "Starting splitlet.")
	ctx, cancel := context.WithCancel(t.Context())
	w, err := client.CoreV1().Events(metav1.NamespaceDefault).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	defer func() { cancel(); <-done }()

	var ev *v1.Event
	select {
	case got := <-w.ResultChan():
		ev = got.Object.(*v1.Event)
	case <-time.After(10 * time.Second):
		t.Fatal("no event written")
	}
	ref := ev.InvolvedObject
	if ref.Kind != "Node" || ref.Name != "n1" || ref.UID != "n1" || ref.Namespace != "" || ev.Reason != NodeStarting ||
		ev.Source.Host != "n1" || ev.Count != 1 || ev.Type != v1.EventTypeNormal || !strings.HasPrefix(ev.Name, "n1.") {
		t.Fatalf("event %+v, want a Normal Starting event about node n1", ev)
	}
	if failures.Load() >= 0 {
		t.Fatal("written without the failures being tried")
	}
}
