package podmanager

import (
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
