package statuskeep

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/store"
)

// fakeWriter records the kept statuses; failures fails the next writes.
type fakeWriter struct {
	mu       sync.Mutex
	kept     map[types.UID]store.KeptStatus
	writes   int
	failures int
	changed  chan struct{}
}

func newFakeWriter() *fakeWriter {
	return &fakeWriter{kept: map[types.UID]store.KeptStatus{}, changed: make(chan struct{}, 100)}
}

func (f *fakeWriter) PutStatuses(m map[types.UID]*store.KeptStatus) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.failures > 0 {
		f.failures--
		return errors.New("disk full")
	}
	for uid, k := range m {
		if k == nil {
			delete(f.kept, uid)
		} else {
			f.kept[uid] = *k
		}
	}
	f.changed <- struct{}{}
	return nil
}

func (f *fakeWriter) get(uid types.UID) (store.KeptStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.kept[uid]
	return k, ok
}

// waitFor checks cond after every write, and every 10 ms for what changes
// just after one, until it holds.
func (f *fakeWriter) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-f.changed:
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestKeeperWritesStatusesAndForgetsRemovedPods(t *testing.T) {
	pods := podmanager.New()
	w := newFakeWriter()
	w.failures = 1 // the first write fails and is retried
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	k := New(w, pods)
	go func() { defer close(done); k.Run(ctx) }()

	created := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", UID: "a", CreationTimestamp: created}}
	pods.AddPod(pod)
	start := metav1.NewTime(created.Add(time.Minute))
	pods.SetPodStatus("a", v1.PodStatus{Phase: v1.PodRunning, StartTime: &start, PodIP: "10.0.0.1"})
	w.waitFor(t, "a's status kept", func() bool { k, ok := w.get("a"); return ok && k.Status.PodIP == "10.0.0.1" })
	if kept, _ := w.get("a"); !kept.CreationTimestamp.Equal(&created) || !kept.Status.StartTime.Equal(&start) {
		t.Errorf("kept %+v, want the creation and start times", kept)
	}
	w.waitFor(t, "no unsaved change", func() bool { return pods.Seq()-k.saved.Load() == 0 })

	// A pod seen without a generated status (a restarted sync's first
	// report) does not overwrite what was kept.
	pods.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default", UID: "b"}})
	pods.RemovePod(pod)
	w.waitFor(t, "a forgotten", func() bool { _, ok := w.get("a"); return !ok })
	if _, ok := w.get("b"); ok {
		t.Error("kept a status for b, which had none")
	}

	// What arrives just before the end is written before Run returns.
	pods.SetPodStatus("b", v1.PodStatus{Phase: v1.PodPending})
	cancel()
	<-done
	if _, ok := w.get("b"); !ok {
		t.Error("b's last status was not written before Run returned")
	}
}
