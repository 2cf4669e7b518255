package syncloop

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/source"
	"github.com/splitlet/splitlet/services/sync/internal/worker"
)

// fakeRuntime is a Runtime holding a fixed set of runtime pods and recording
// kills and removals.
type fakeRuntime struct {
	mu      sync.Mutex
	pods    map[types.UID]*kuberuntime.RunningPod
	killed  map[types.UID]bool
	removed map[types.UID]bool
	// grace records the grace period override of each kill.
	grace map[types.UID]*int64
}

var _ Runtime = (*fakeRuntime)(nil)

func (f *fakeRuntime) GetPodStatus(_ context.Context, uid types.UID, name, ns string) (*container.PodStatus, error) {
	return &container.PodStatus{ID: uid, Name: name, Namespace: ns}, nil
}
func (f *fakeRuntime) SyncPod(context.Context, *v1.Pod, *container.PodStatus, kuberuntime.ProbeResults) error {
	return nil
}
func (f *fakeRuntime) KillPod(_ context.Context, _ *v1.Pod, uid types.UID, grace *int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed[uid] = true
	if f.grace != nil {
		f.grace[uid] = grace
	}
	return nil
}
func (f *fakeRuntime) RemovePod(_ context.Context, uid types.UID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed[uid] = true
	delete(f.pods, uid)
	return nil
}
func (f *fakeRuntime) GetPods(context.Context) (map[types.UID]*kuberuntime.RunningPod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[types.UID]*kuberuntime.RunningPod{}
	for k, v := range f.pods {
		out[k] = v
	}
	return out, nil
}
func (f *fakeRuntime) ContainerWaiting(types.UID, string) (kuberuntime.WaitingReason, bool) {
	return kuberuntime.WaitingReason{}, false
}
func (f *fakeRuntime) ForgetPod(types.UID)                  {}
func (f *fakeRuntime) GarbageCollect(context.Context) error { return nil }
func (f *fakeRuntime) GC()                                  {}

func (f *fakeRuntime) state(uid types.UID) (killed, removed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed[uid], f.removed[uid]
}

func TestHandlePodCleanups(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := &fakeRuntime{
		pods: map[types.UID]*kuberuntime.RunningPod{
			"desired": {UID: "desired", Managed: true},
			"orphan":  {UID: "orphan", Name: "o", Namespace: "default", Managed: true},
			"foreign": {UID: "foreign", Name: "kubelets", Namespace: "default"},
		},
		killed: map[types.UID]bool{}, removed: map[types.UID]bool{},
	}
	pm := podmanager.New()
	k := New(Options{}, source.NewPodConfig(), pm, rt, &fakeCRI{})
	k.workers = worker.New(ctx, k, time.Hour, time.Hour, nil)
	pm.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "desired", Name: "d", Namespace: "default"}})

	k.HandlePodCleanups(ctx)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if killed, _ := rt.state("orphan"); killed && k.workers.IsPodKnownTerminated("orphan") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the orphan was not killed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The worker finishes (SyncTerminatedPod) right after; the next
	// housekeeping pass forgets it and removes the leftovers.
	for {
		k.HandlePodCleanups(ctx)
		if _, removed := rt.state("orphan"); removed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the orphan's leftovers were not removed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, uid := range []types.UID{"desired", "foreign"} {
		if killed, removed := rt.state(uid); killed || removed {
			t.Errorf("pod %s: killed %v removed %v, want untouched", uid, killed, removed)
		}
	}
}
