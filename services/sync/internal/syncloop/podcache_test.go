package syncloop

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

// statusRuntime is a Runtime whose pods' statuses are set by the test; it
// counts GetPodStatus calls and answers SyncPodWithResult with result.
type statusRuntime struct {
	fakeRuntime
	mu     sync.Mutex
	status map[types.UID]*container.PodStatus
	reads  int
	err    error
	result kuberuntime.SyncResult
	// synced is the status each SyncPodWithResult call was given, and
	// restartAll its restartAllContainers.
	synced     []*container.PodStatus
	restartAll []bool
}

var (
	_ Runtime            = (*statusRuntime)(nil)
	_ resultSyncer       = (*statusRuntime)(nil)
	_ podStatusGenerator = (*statusRuntime)(nil)
)

func newStatusRuntime() *statusRuntime {
	return &statusRuntime{
		fakeRuntime: fakeRuntime{pods: map[types.UID]*kuberuntime.RunningPod{}, killed: map[types.UID]bool{}, removed: map[types.UID]bool{}},
		status:      map[types.UID]*container.PodStatus{},
	}
}

func (f *statusRuntime) GetPodStatus(_ context.Context, uid types.UID, _, _ string) (*container.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return nil, f.err
	}
	if ps, ok := f.status[uid]; ok {
		return ps, nil
	}
	return &container.PodStatus{ID: uid}, nil
}

func (f *statusRuntime) SyncPodWithResult(_ context.Context, _ *v1.Pod, ps *container.PodStatus, _ kuberuntime.ProbeResults, restartAll bool) (kuberuntime.SyncResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced = append(f.synced, ps)
	f.restartAll = append(f.restartAll, restartAll)
	return f.result, nil
}

// GeneratePodStatus answers with the status set for the event's pod, as
// if the event carried it.
func (f *statusRuntime) GeneratePodStatus(_ context.Context, ev *runtimeapi.ContainerEventResponse) (*container.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps, ok := f.status[types.UID(ev.GetPodSandboxStatus().GetMetadata().GetUid())]
	if !ok {
		return nil, errors.New("no status")
	}
	return ps, nil
}

func (f *statusRuntime) setStatus(uid types.UID, ps *container.PodStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[uid] = ps
}

func (f *statusRuntime) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func (f *statusRuntime) setResult(r kuberuntime.SyncResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.result = r
}

func (f *statusRuntime) lastSynced() *container.PodStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.synced[len(f.synced)-1]
}

// runningStatus is a pod with a ready sandbox and one container in state.
func runningStatus(uid types.UID, state container.State) *container.PodStatus {
	return &container.PodStatus{
		ID:              uid,
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{{Id: "sb-" + string(uid), State: runtimeapi.PodSandboxState_SANDBOX_READY}},
		ContainerStatuses: []*container.Status{{
			ID: container.BuildContainerID("fake", "c-"+string(uid)), Name: "c", State: state,
			CreatedAt: time.Unix(1, 0), StartedAt: time.Unix(2, 0),
		}},
	}
}

func cachePod(uid types.UID) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "default", UID: uid},
		Spec:       v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "c", Image: "i"}}},
	}
}

func newCacheKubelet(rt Runtime) (*Kubelet, *podmanager.Manager) {
	pm := podmanager.New()
	return New(Options{}, source.NewPodConfig(), pm, rt, &fakeCRI{}), pm
}

func TestSyncPodReadsTheRuntimeOnlyWhenNeeded(t *testing.T) {
	ctx := context.Background()
	const uid = types.UID("p")
	pod := cachePod(uid)
	for _, tc := range []struct {
		desc string
		// first is what the first sync's SyncPod reports; between runs
		// after it, before the second sync.
		first   kuberuntime.SyncResult
		between func(k *Kubelet, rt *statusRuntime)
		// wantReads are the GetPodStatus calls of the first sync, then of
		// between and the second sync.
		wantReads [2]int
	}{
		{
			desc:      "a sync that did nothing leaves the next one a cached status",
			wantReads: [2]int{1, 0},
		},
		{
			desc:      "a sync that only changed a waiting reason reads once",
			first:     kuberuntime.SyncResult{WaitingChanged: true},
			wantReads: [2]int{1, 0},
		},
		{
			desc:      "a sync that acted reads again, and the next one uses that read",
			first:     kuberuntime.SyncResult{Acted: true},
			wantReads: [2]int{2, 0},
		},
		{
			desc: "a relist that saw a change while nothing ran refreshes the cache itself",
			between: func(k *Kubelet, rt *statusRuntime) {
				rt.setStatus(uid, runningStatus(uid, container.ContainerStateExited))
				k.pleg.rt = &fakeCRI{
					sandboxes:  []*runtimeapi.PodSandbox{sb("sb-p", "p", runtimeapi.PodSandboxState_SANDBOX_READY)},
					containers: []*runtimeapi.Container{ctr("c-p", "p", runtimeapi.ContainerState_CONTAINER_EXITED)},
				}
				k.pleg.relist(ctx)
			},
			// The relist's read is the one between the syncs.
			wantReads: [2]int{1, 1},
		},
		{
			desc: "an invalidated entry makes the next sync read",
			between: func(k *Kubelet, _ *statusRuntime) {
				k.cache.Invalidate(uid, time.Now())
			},
			wantReads: [2]int{1, 1},
		},
		{
			desc: "a container event's status is used without a read",
			between: func(k *Kubelet, rt *statusRuntime) {
				rt.setStatus(uid, runningStatus(uid, container.ContainerStateExited))
				k.pleg.cacheEvent(ctx, uid, &runtimeapi.ContainerEventResponse{
					CreatedAt:        time.Now().UnixNano(),
					PodSandboxStatus: &runtimeapi.PodSandboxStatus{Metadata: &runtimeapi.PodSandboxMetadata{Uid: string(uid)}},
				})
			},
			wantReads: [2]int{1, 0},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := newStatusRuntime()
			rt.setStatus(uid, runningStatus(uid, container.ContainerStateRunning))
			k, pm := newCacheKubelet(rt)
			pm.AddPod(pod)
			rt.setResult(tc.first)
			if _, err := k.SyncPod(ctx, 0, pod); err != nil {
				t.Fatal(err)
			}
			if got := rt.readCount(); got != tc.wantReads[0] {
				t.Errorf("first sync read the runtime %d times, want %d", got, tc.wantReads[0])
			}
			rt.setResult(kuberuntime.SyncResult{})
			before := rt.readCount()
			if tc.between != nil {
				tc.between(k, rt)
			}
			if _, err := k.SyncPod(ctx, 0, pod); err != nil {
				t.Fatal(err)
			}
			if got := rt.readCount() - before; got != tc.wantReads[1] {
				t.Errorf("second sync read the runtime %d times, want %d", got, tc.wantReads[1])
			}
			// Whatever its source, the second sync acts on the runtime's
			// latest state.
			want := rt.status[uid].ContainerStatuses[0].State
			if got := rt.lastSynced().ContainerStatuses[0].State; got != want {
				t.Errorf("second sync saw container state %s, want %s", got, want)
			}
		})
	}
}

// A runtime that cannot say whether it acted is taken to have acted: it is
// read after every sync, and the next sync starts from that read.
func TestSyncPodWithoutSyncResultReadsAfterEverySync(t *testing.T) {
	ctx := context.Background()
	rt := &countingRuntime{fakeRuntime: fakeRuntime{pods: map[types.UID]*kuberuntime.RunningPod{}}}
	k, pm := newCacheKubelet(rt)
	pod := cachePod("p")
	pm.AddPod(pod)
	for range 2 {
		if _, err := k.SyncPod(ctx, 0, pod); err != nil {
			t.Fatal(err)
		}
	}
	if rt.reads != 3 {
		t.Errorf("two syncs read the runtime %d times, want 3 (before and after the first, after the second)", rt.reads)
	}
}

type countingRuntime struct {
	fakeRuntime
	reads int
}

func (f *countingRuntime) GetPodStatus(ctx context.Context, uid types.UID, name, ns string) (*container.PodStatus, error) {
	f.reads++
	return f.fakeRuntime.GetPodStatus(ctx, uid, name, ns)
}

func TestRelistUpdatesTheCache(t *testing.T) {
	ctx := context.Background()
	const uid = types.UID("p")
	listed := &fakeCRI{
		sandboxes:  []*runtimeapi.PodSandbox{sb("sb-p", "p", runtimeapi.PodSandboxState_SANDBOX_READY)},
		containers: []*runtimeapi.Container{ctr("c-p", "p", runtimeapi.ContainerState_CONTAINER_RUNNING)},
	}
	for _, tc := range []struct {
		desc    string
		cached  *container.PodStatus
		syncing bool
		wanted  bool
		readErr error
		// wantReads is how many times the relist read the pod's status;
		// wantCached whether the cache then holds a status for it.
		wantReads  int
		wantCached bool
	}{
		{desc: "nothing cached: read", wanted: true, wantReads: 1, wantCached: true},
		{desc: "the cache shows what was listed: no read", cached: runningStatus(uid, container.ContainerStateRunning), wanted: true, wantReads: 0, wantCached: true},
		{desc: "the cache is behind the listing: read", cached: runningStatus(uid, container.ContainerStateCreated), wanted: true, wantReads: 1, wantCached: true},
		{desc: "the worker is syncing: invalidate, no read", cached: runningStatus(uid, container.ContainerStateCreated), syncing: true, wanted: true, wantReads: 0, wantCached: false},
		{desc: "a pod sync does not handle: no read", wanted: false, wantReads: 0, wantCached: false},
		{desc: "a failed read invalidates", cached: runningStatus(uid, container.ContainerStateCreated), wanted: true, readErr: errors.New("boom"), wantReads: 1, wantCached: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := newStatusRuntime()
			rt.setStatus(uid, runningStatus(uid, container.ContainerStateRunning))
			rt.err = tc.readErr
			g := newPLEG(listed, 0, NewMetrics(nil))
			g.cache, g.statuses = container.NewCache(), rt
			g.wanted = func(types.UID) bool { return tc.wanted }
			g.syncing = func(types.UID) bool { return tc.syncing }
			if tc.cached != nil {
				g.cache.Set(uid, tc.cached, time.Now().Add(-time.Second))
			}
			g.relist(ctx)
			if got := drainUIDs(g); got != "p" {
				t.Errorf("relist woke %q, want the changed pod p", got)
			}
			if got := rt.readCount(); got != tc.wantReads {
				t.Errorf("relist read the status %d times, want %d", got, tc.wantReads)
			}
			if _, _, ok := g.cache.Get(uid); ok != tc.wantCached {
				t.Errorf("cache holds a status: %v, want %v", ok, tc.wantCached)
			}
		})
	}
}

func TestMatchesListing(t *testing.T) {
	const uid = types.UID("p")
	ready := runtimeapi.PodSandboxState_SANDBOX_READY
	running, exited := runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED
	record := func(uid types.UID, state int32, sandbox bool) plegRecord {
		return plegRecord{uid: uid, state: state, sandbox: sandbox}
	}
	for _, tc := range []struct {
		desc string
		now  map[string]plegRecord
		want bool
	}{
		{
			desc: "same sandbox and container in the same states",
			now:  map[string]plegRecord{"sb-p": record(uid, int32(ready), true), "c-p": record(uid, int32(running)+containerStateOffset, false)},
			want: true,
		},
		{
			desc: "container state differs",
			now:  map[string]plegRecord{"sb-p": record(uid, int32(ready), true), "c-p": record(uid, int32(exited)+containerStateOffset, false)},
			want: false,
		},
		{
			desc: "an extra container was listed",
			now: map[string]plegRecord{"sb-p": record(uid, int32(ready), true), "c-p": record(uid, int32(running)+containerStateOffset, false),
				"c2": record(uid, int32(running)+containerStateOffset, false)},
			want: false,
		},
		{
			desc: "another pod's containers do not count",
			now: map[string]plegRecord{"sb-p": record(uid, int32(ready), true), "c-p": record(uid, int32(running)+containerStateOffset, false),
				"c-q": record("q", int32(running)+containerStateOffset, false)},
			want: true,
		},
		{
			desc: "the container is gone",
			now:  map[string]plegRecord{"sb-p": record(uid, int32(ready), true)},
			want: false,
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := newListing(tc.now).matches(runningStatus(uid, container.ContainerStateRunning), uid); got != tc.want {
				t.Errorf("matches = %v, want %v", got, tc.want)
			}
		})
	}
}

// The runtime is the truth: a pod whose cached status shows objects the
// runtime no longer lists is woken with a fresh status even when the
// previous listing never held them (created and reported by events between
// two relists), and a pod whose cached status matches the listing, or was
// read after the listing began, is left alone.
func TestRelistReconcilesTheCacheWithTheRuntime(t *testing.T) {
	ctx := context.Background()
	const uid = types.UID("p")
	running := runtimeapi.ContainerState_CONTAINER_RUNNING
	ready := runtimeapi.PodSandboxState_SANDBOX_READY
	present := fakeCRI{
		sandboxes:  []*runtimeapi.PodSandbox{sb("sb-p", "p", ready)},
		containers: []*runtimeapi.Container{ctr("c-p", "p", running)},
	}
	for _, tc := range []struct {
		desc string
		// runtime is what the relist lists; the previous relist listed
		// nothing, so the diff alone sees no change when it is empty too.
		runtime  fakeCRI
		cachedAt time.Duration // when the cached status was read, from now
		want     string        // pods woken
		wantRead bool
	}{
		{desc: "the runtime lost what the cache shows: woken, re-read", runtime: fakeCRI{}, cachedAt: -time.Second, want: "p", wantRead: true},
		{desc: "the cache matches the listing: nothing", runtime: present, cachedAt: -time.Second, want: "p"},
		{desc: "a status read after the listing began is newer than it: nothing", runtime: fakeCRI{}, cachedAt: time.Hour, want: ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cri := fakeCRI{}
			g := newPLEG(&cri, 0, NewMetrics(nil))
			rt := newStatusRuntime()
			g.cache, g.statuses = container.NewCache(), rt
			g.relist(ctx) // the previous listing: empty
			drainUIDs(g)
			g.cache.Set(uid, runningStatus(uid, container.ContainerStateRunning), time.Now().Add(tc.cachedAt))
			cri = tc.runtime
			g.relist(ctx)
			if got := drainUIDs(g); got != tc.want {
				t.Errorf("relist woke %q, want %q", got, tc.want)
			}
			if got := rt.readCount() > 0; got != tc.wantRead {
				t.Errorf("relist read the status: %v, want %v", got, tc.wantRead)
			}
			if tc.wantRead {
				ps, _, ok := g.cache.Get(uid)
				if !ok || len(ps.SandboxStatuses)+len(ps.ContainerStatuses) != 0 {
					t.Errorf("cached status after the relist = %+v, want the runtime's empty one", ps)
				}
			}
		})
	}
}
