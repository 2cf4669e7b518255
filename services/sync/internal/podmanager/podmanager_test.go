package podmanager

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func testPod(uid, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID("uid-" + uid), Name: name, Namespace: "default"}}
}

func TestEventsAndStatus(t *testing.T) {
	m := New()
	events, cancel := m.Subscribe(16)
	defer cancel()
	p := testPod("1", "web")
	m.AddPod(p)
	m.SetPodStatus(p.UID, v1.PodStatus{Phase: v1.PodRunning})
	m.SetPodStatus(p.UID, v1.PodStatus{Phase: v1.PodRunning}) // unchanged: no event
	m.RemovePod(p)

	var got []EventType
	var phases []v1.PodPhase
	for len(got) < 3 {
		ev := <-events
		got = append(got, ev.Type)
		phases = append(phases, ev.Pod.Status.Phase)
	}
	select {
	case ev := <-events:
		t.Fatalf("unexpected extra event %v", ev.Type)
	default:
	}
	want := []EventType{Added, Modified, Deleted}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("event types = %v, want %v", got, want)
		}
	}
	if phases[1] != v1.PodRunning || phases[2] != v1.PodRunning {
		t.Errorf("event phases = %v, want the status carried by the modified and deleted events", phases)
	}
	if m.GetPodByFullName("default", "web") != nil {
		t.Error("removed pod still found by name")
	}
}

func TestSlowSubscriberIsDropped(t *testing.T) {
	m := New()
	events, cancel := m.Subscribe(1)
	defer cancel()
	m.AddPod(testPod("1", "a"))
	m.AddPod(testPod("2", "b")) // buffer full: the subscriber is dropped
	<-events
	if _, ok := <-events; ok {
		t.Fatal("slow subscriber's channel still open, want it closed so the watcher re-lists")
	}
}

func TestStatusOfUnknownPodIgnored(t *testing.T) {
	m := New()
	m.SetPodStatus("nope", v1.PodStatus{Phase: v1.PodRunning})
	if _, ok := m.GetPodStatus("nope"); ok {
		t.Error("status kept for a pod the manager does not know")
	}
}

func TestGetPodPhase(t *testing.T) {
	m := New()
	p := testPod("1", "web")
	m.AddPod(p)
	if phase, ok := m.GetPodPhase(p.UID); ok {
		t.Errorf("phase %q before any status was set", phase)
	}
	m.SetPodStatus(p.UID, v1.PodStatus{Phase: v1.PodFailed})
	if phase, ok := m.GetPodPhase(p.UID); !ok || phase != v1.PodFailed {
		t.Errorf("GetPodPhase = %q, %v; want Failed, true", phase, ok)
	}
	if _, ok := m.GetPodPhase("other"); ok {
		t.Error("phase for a pod the manager does not know")
	}
}

// GetPods keeps its order (namespace, name, UID) and its latest pods while
// pods are added, replaced, deleted and re-created under the same name in
// any order: the order is kept as pods change, no longer sorted per call.
func TestGetPodsStaysOrdered(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := New()
	want := map[types.UID]*v1.Pod{}
	for step := range 3000 {
		uid := types.UID(fmt.Sprintf("uid-%d", rng.IntN(60)))
		ns, name := fmt.Sprintf("ns-%d", rng.IntN(3)), fmt.Sprintf("pod-%d", rng.IntN(15))
		if old, ok := want[uid]; ok {
			// A known UID keeps its name; the pod object is new.
			ns, name = old.Namespace, old.Name
		}
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Namespace: ns, Name: name,
			Labels: map[string]string{"step": strconv.Itoa(step)}}}
		if rng.IntN(3) == 0 {
			m.RemovePod(pod)
			delete(want, uid)
		} else {
			m.AddPod(pod)
			want[uid] = pod
		}
		got := m.GetPods()
		if len(got) != len(want) {
			t.Fatalf("step %d: %d pods, want %d", step, len(got), len(want))
		}
		for i, p := range got {
			if want[p.UID] != p {
				t.Fatalf("step %d: pod %s is not the latest recorded", step, p.UID)
			}
			if i > 0 && podOrder(got[i-1], p) >= 0 {
				t.Fatalf("step %d: %s/%s (%s) listed before %s/%s (%s)", step,
					got[i-1].Namespace, got[i-1].Name, got[i-1].UID, p.Namespace, p.Name, p.UID)
			}
		}
	}
}
