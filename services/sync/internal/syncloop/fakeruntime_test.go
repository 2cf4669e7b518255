package syncloop

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/pleg/plegtest"
)

// fakeRuntime implements the whole Runtime, so the sync loop under test
// takes the paths it takes in production. Pod statuses come from the
// embedded plegtest.Statuses (setStatus; GetPodStatus calls are counted),
// GetPodStatusOf answers from them too and records what it was asked for,
// SyncPod records what it was given and answers result and syncErr, and
// the node's pods (GetPods) are a fixed set whose kills and removals are
// recorded.
type fakeRuntime struct {
	*plegtest.Statuses

	mu      sync.Mutex
	pods    map[types.UID]*kuberuntime.RunningPod
	killed  map[types.UID]bool
	removed map[types.UID]bool
	// grace records the grace period override of each kill.
	grace map[types.UID]*int64
	// lists and gcs count GetPods and GarbageCollect calls.
	lists, gcs int
	// terminated is what the last DeleteAllUnusedContainers was given.
	terminated func(types.UID) bool
	// result and syncErr answer SyncPod; synced is the status each call
	// was given, restartAll its restartAllContainers.
	result     kuberuntime.SyncResult
	syncErr    error
	synced     []*container.PodStatus
	restartAll []bool
	// knownReads are what each GetPodStatusOf call was given: sandbox
	// statuses as "status:<id>", then the IDs to read.
	knownReads [][]string
}

var _ Runtime = (*fakeRuntime)(nil)

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{
		Statuses: plegtest.NewStatuses(),
		pods:     map[types.UID]*kuberuntime.RunningPod{},
		killed:   map[types.UID]bool{}, removed: map[types.UID]bool{}, grace: map[types.UID]*int64{},
	}
}

func (f *fakeRuntime) GetPodStatusOf(_ context.Context, uid types.UID, _, _ string, objs kuberuntime.PodObjects) (*container.PodStatus, error) {
	f.mu.Lock()
	var known []string
	for _, sb := range objs.Sandboxes {
		known = append(known, "status:"+sb.GetId())
	}
	known = append(append(known, objs.SandboxIDs...), objs.ContainerIDs...)
	f.knownReads = append(f.knownReads, known)
	f.mu.Unlock()
	return f.Status(uid), nil
}

func (f *fakeRuntime) SyncPod(_ context.Context, _ *v1.Pod, ps *container.PodStatus, _ kuberuntime.ProbeResults, restartAll bool) (kuberuntime.SyncResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced = append(f.synced, ps)
	f.restartAll = append(f.restartAll, restartAll)
	return f.result, f.syncErr
}

func (f *fakeRuntime) KillPod(_ context.Context, _ *v1.Pod, uid types.UID, grace *int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed[uid] = true
	f.grace[uid] = grace
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
	f.lists++
	out := map[types.UID]*kuberuntime.RunningPod{}
	for k, v := range f.pods {
		out[k] = v
	}
	return out, nil
}

func (f *fakeRuntime) ContainerWaiting(types.UID, string) (kuberuntime.WaitingReason, bool) {
	return kuberuntime.WaitingReason{}, false
}

// SupportsRecursiveReadOnlyMounts says no, as a runtime reporting no
// handlers does.
func (f *fakeRuntime) SupportsRecursiveReadOnlyMounts(context.Context, *v1.Pod) bool { return false }

func (f *fakeRuntime) ForgetPod(types.UID) {}

func (f *fakeRuntime) GarbageCollect(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gcs++
	return nil
}

func (f *fakeRuntime) DeleteAllUnusedContainers(_ context.Context, terminated func(types.UID) bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gcs++
	f.terminated = terminated
	return nil
}

func (f *fakeRuntime) GC() {}

func (f *fakeRuntime) setStatus(uid types.UID, ps *container.PodStatus) { f.Set(uid, ps) }

func (f *fakeRuntime) readCount() int { return f.Reads() }

func (f *fakeRuntime) setResult(r kuberuntime.SyncResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.result = r
}

func (f *fakeRuntime) lastSynced() *container.PodStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.synced[len(f.synced)-1]
}

func (f *fakeRuntime) state(uid types.UID) (killed, removed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed[uid], f.removed[uid]
}

func (f *fakeRuntime) counts() (lists, gcs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists, f.gcs
}

// runningStatus is a pod with a ready sandbox and one container in state.
var runningStatus = plegtest.RunningStatus

// fakeCRI lists the runtime's sandboxes and containers for the PLEG.
type fakeCRI = plegtest.FakeCRI

var (
	sb  = plegtest.Sandbox
	ctr = plegtest.Container
)
