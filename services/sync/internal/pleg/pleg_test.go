package pleg

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/pleg/plegtest"
)

// newTestPLEG is a PLEG listing cri and reading statuses from rt into a
// fresh cache, for every pod.
func newTestPLEG(cri runtimeapi.RuntimeServiceClient, rt Runtime) *PLEG {
	return New(Options{CRI: cri, Runtime: rt, Cache: container.NewCache()})
}

func TestRelistReportsChangedPods(t *testing.T) {
	running, exited := runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED
	ready := runtimeapi.PodSandboxState_SANDBOX_READY
	for _, tc := range []struct {
		desc        string
		before      plegtest.FakeCRI
		after       plegtest.FakeCRI
		wantChanged string
	}{
		{
			desc:        "nothing changed",
			before:      plegtest.FakeCRI{Containers: []*runtimeapi.Container{plegtest.Container("c1", "a", running)}},
			after:       plegtest.FakeCRI{Containers: []*runtimeapi.Container{plegtest.Container("c1", "a", running)}},
			wantChanged: "",
		},
		{
			desc:        "a container exited",
			before:      plegtest.FakeCRI{Containers: []*runtimeapi.Container{plegtest.Container("c1", "a", running), plegtest.Container("c2", "b", running)}},
			after:       plegtest.FakeCRI{Containers: []*runtimeapi.Container{plegtest.Container("c1", "a", exited), plegtest.Container("c2", "b", running)}},
			wantChanged: "a",
		},
		{
			desc:        "appeared and disappeared",
			before:      plegtest.FakeCRI{Sandboxes: []*runtimeapi.PodSandbox{plegtest.Sandbox("s1", "a", ready)}},
			after:       plegtest.FakeCRI{Containers: []*runtimeapi.Container{plegtest.Container("c9", "b", running)}},
			wantChanged: "a,b",
		},
		{
			desc:        "unlabelled containers are not ours to report",
			before:      plegtest.FakeCRI{},
			after:       plegtest.FakeCRI{Containers: []*runtimeapi.Container{{Id: "x", State: running}}},
			wantChanged: "",
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ctx := context.Background()
			cri := tc.before
			// Statuses are not cached: the diff alone decides.
			g := New(Options{CRI: &cri, Runtime: plegtest.NewStatuses(), Cache: container.NewCache(), Wanted: func(types.UID) bool { return false }})
			g.Relist(ctx)
			drainUIDs(g)
			cri.Sandboxes, cri.Containers = tc.after.Sandboxes, tc.after.Containers
			g.Relist(ctx)
			if got := drainUIDs(g); got != tc.wantChanged {
				t.Errorf("changed pods = %q, want %q", got, tc.wantChanged)
			}
		})
	}
}

func drainUIDs(g *PLEG) string {
	var uids []string
	for _, uid := range g.Take() {
		uids = append(uids, string(uid))
	}
	sort.Strings(uids)
	return strings.Join(uids, ",")
}

func TestRelistUpdatesTheCache(t *testing.T) {
	ctx := context.Background()
	const uid = types.UID("p")
	listed := &plegtest.FakeCRI{
		Sandboxes:  []*runtimeapi.PodSandbox{plegtest.Sandbox("sb-p", "p", runtimeapi.PodSandboxState_SANDBOX_READY)},
		Containers: []*runtimeapi.Container{plegtest.Container("c-p", "p", runtimeapi.ContainerState_CONTAINER_RUNNING)},
	}
	for _, tc := range []struct {
		desc   string
		cached *container.PodStatus
		// cachedAfter: the cached status was read after the listing
		// began (else a second before).
		cachedAfter bool
		syncing     bool
		wanted      bool
		readErr     error
		// wantReads is how many times the relist read the pod's status;
		// wantCached whether the cache then holds a status for it.
		wantReads  int
		wantCached bool
	}{
		{desc: "nothing cached: read", wanted: true, wantReads: 1, wantCached: true},
		{desc: "the cache shows what was listed: no read", cached: plegtest.RunningStatus(uid, container.ContainerStateRunning), wanted: true, wantReads: 0, wantCached: true},
		{desc: "the cache is behind the listing: read", cached: plegtest.RunningStatus(uid, container.ContainerStateCreated), wanted: true, wantReads: 1, wantCached: true},
		{desc: "the cache differs but was read after the listing began: no read", cached: plegtest.RunningStatus(uid, container.ContainerStateCreated), cachedAfter: true, wanted: true, wantReads: 0, wantCached: true},
		{desc: "the worker is syncing: invalidate, no read", cached: plegtest.RunningStatus(uid, container.ContainerStateCreated), syncing: true, wanted: true, wantReads: 0, wantCached: false},
		{desc: "a pod sync does not handle: no read", wanted: false, wantReads: 0, wantCached: false},
		{desc: "a failed read invalidates", cached: plegtest.RunningStatus(uid, container.ContainerStateCreated), wanted: true, readErr: errors.New("boom"), wantReads: 1, wantCached: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := plegtest.NewStatuses()
			rt.Set(uid, plegtest.RunningStatus(uid, container.ContainerStateRunning))
			rt.SetErr(tc.readErr)
			g := New(Options{
				CRI: listed, Runtime: rt, Cache: container.NewCache(),
				Wanted:  func(types.UID) bool { return tc.wanted },
				Syncing: func(types.UID) bool { return tc.syncing },
			})
			if tc.cached != nil {
				readAt := time.Now().Add(-time.Second)
				if tc.cachedAfter {
					readAt = time.Now().Add(time.Hour)
				}
				g.opts.Cache.Set(uid, tc.cached, readAt)
			}
			g.Relist(ctx)
			if got := drainUIDs(g); got != "p" {
				t.Errorf("relist woke %q, want the changed pod p", got)
			}
			if got := rt.Reads(); got != tc.wantReads {
				t.Errorf("relist read the status %d times, want %d", got, tc.wantReads)
			}
			if _, _, ok := g.opts.Cache.Get(uid); ok != tc.wantCached {
				t.Errorf("cache holds a status: %v, want %v", ok, tc.wantCached)
			}
		})
	}
}

func TestMatchesListing(t *testing.T) {
	const uid = types.UID("p")
	ready := runtimeapi.PodSandboxState_SANDBOX_READY
	running, exited := runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED
	rec := func(uid types.UID, state int32, sandbox bool) record {
		return record{uid: uid, state: state, sandbox: sandbox}
	}
	for _, tc := range []struct {
		desc string
		now  map[string]record
		want bool
	}{
		{
			desc: "same sandbox and container in the same states",
			now:  map[string]record{"sb-p": rec(uid, int32(ready), true), "c-p": rec(uid, int32(running)+containerStateOffset, false)},
			want: true,
		},
		{
			desc: "container state differs",
			now:  map[string]record{"sb-p": rec(uid, int32(ready), true), "c-p": rec(uid, int32(exited)+containerStateOffset, false)},
			want: false,
		},
		{
			desc: "an extra container was listed",
			now: map[string]record{"sb-p": rec(uid, int32(ready), true), "c-p": rec(uid, int32(running)+containerStateOffset, false),
				"c2": rec(uid, int32(running)+containerStateOffset, false)},
			want: false,
		},
		{
			desc: "another pod's containers do not count",
			now: map[string]record{"sb-p": rec(uid, int32(ready), true), "c-p": rec(uid, int32(running)+containerStateOffset, false),
				"c-q": rec("q", int32(running)+containerStateOffset, false)},
			want: true,
		},
		{
			desc: "the container is gone",
			now:  map[string]record{"sb-p": rec(uid, int32(ready), true)},
			want: false,
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := newListing(tc.now).matches(plegtest.RunningStatus(uid, container.ContainerStateRunning), uid); got != tc.want {
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
	present := plegtest.FakeCRI{
		Sandboxes:  []*runtimeapi.PodSandbox{plegtest.Sandbox("sb-p", "p", ready)},
		Containers: []*runtimeapi.Container{plegtest.Container("c-p", "p", running)},
	}
	for _, tc := range []struct {
		desc string
		// runtime is what the relist lists; the previous relist listed
		// nothing, so the diff alone sees no change when it is empty too.
		runtime  plegtest.FakeCRI
		cachedAt time.Duration // when the cached status was read, from now
		want     string        // pods woken
		wantRead bool
	}{
		{desc: "the runtime lost what the cache shows: woken, re-read", runtime: plegtest.FakeCRI{}, cachedAt: -time.Second, want: "p", wantRead: true},
		{desc: "the cache matches the listing: nothing", runtime: present, cachedAt: -time.Second, want: "p"},
		{desc: "a status read after the listing began is newer than it: nothing", runtime: plegtest.FakeCRI{}, cachedAt: time.Hour, want: ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cri := plegtest.FakeCRI{}
			rt := plegtest.NewStatuses()
			g := newTestPLEG(&cri, rt)
			g.Relist(ctx) // the previous listing: empty
			drainUIDs(g)
			g.opts.Cache.Set(uid, plegtest.RunningStatus(uid, container.ContainerStateRunning), time.Now().Add(tc.cachedAt))
			cri = tc.runtime
			g.Relist(ctx)
			if got := drainUIDs(g); got != tc.want {
				t.Errorf("relist woke %q, want %q", got, tc.want)
			}
			if got := rt.Reads() > 0; got != tc.wantRead {
				t.Errorf("relist read the status: %v, want %v", got, tc.wantRead)
			}
			if tc.wantRead {
				ps, _, ok := g.opts.Cache.Get(uid)
				if !ok || len(ps.SandboxStatuses)+len(ps.ContainerStatuses) != 0 {
					t.Errorf("cached status after the relist = %+v, want the runtime's empty one", ps)
				}
			}
		})
	}
}

// RuntimeMayHold says no only after a complete relist listed nothing of
// the pod and nothing named it since the listing began.
func TestRuntimeMayHold(t *testing.T) {
	ctx := context.Background()
	const uid = types.UID("p")
	running := plegtest.FakeCRI{
		Sandboxes:  []*runtimeapi.PodSandbox{plegtest.Sandbox("sb-p", "p", runtimeapi.PodSandboxState_SANDBOX_READY)},
		Containers: []*runtimeapi.Container{plegtest.Container("c-p", "p", runtimeapi.ContainerState_CONTAINER_RUNNING)},
	}
	for _, tc := range []struct {
		desc string
		cri  plegtest.FakeCRI
		// run acts on the PLEG before the question.
		run  func(g *PLEG)
		want bool
	}{
		{desc: "no relist has completed yet", want: true},
		{desc: "a relist listed nothing of the pod", run: func(g *PLEG) { g.Relist(ctx) }, want: false},
		{desc: "a relist listed the pod", cri: running, run: func(g *PLEG) { g.Relist(ctx) }, want: true},
		{
			desc: "an event named the pod after the relist",
			run: func(g *PLEG) {
				g.Relist(ctx)
				g.queueEvent(uid, &runtimeapi.ContainerEventResponse{CreatedAt: time.Now().UnixNano()})
			},
			want: true,
		},
		{
			desc: "the pod was touched after the relist",
			run: func(g *PLEG) {
				g.Relist(ctx)
				g.Touch(uid, time.Now())
			},
			want: true,
		},
		{
			desc: "a relist that began after the touch listed nothing",
			run: func(g *PLEG) {
				touched := time.Now()
				g.Touch(uid, touched)
				// The relist must begin after the touch: wait for the
				// clock to move past it.
				for !time.Now().After(touched) {
				}
				g.Relist(ctx)
			},
			want: false,
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cri := tc.cri
			g := newTestPLEG(&cri, plegtest.NewStatuses())
			if tc.run != nil {
				tc.run(g)
			}
			if got := g.RuntimeMayHold(uid); got != tc.want {
				t.Errorf("RuntimeMayHold = %v, want %v", got, tc.want)
			}
		})
	}
}

// An event's status goes into the cache without a runtime read; an event
// whose status cannot be built invalidates the pod's entry instead.
func TestEventStatusIsCached(t *testing.T) {
	ctx := context.Background()
	const uid = types.UID("p")
	event := &runtimeapi.ContainerEventResponse{
		CreatedAt:        time.Now().UnixNano(),
		PodSandboxStatus: &runtimeapi.PodSandboxStatus{Metadata: &runtimeapi.PodSandboxMetadata{Uid: string(uid)}},
	}
	for _, tc := range []struct {
		desc       string
		buildable  bool
		wantExited bool
	}{
		{desc: "the event's status is cached", buildable: true, wantExited: true},
		{desc: "an event that cannot be built invalidates", buildable: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := plegtest.NewStatuses()
			g := newTestPLEG(&plegtest.FakeCRI{}, rt)
			g.opts.Cache.Set(uid, plegtest.RunningStatus(uid, container.ContainerStateRunning), time.Now().Add(-time.Second))
			if tc.buildable {
				rt.Set(uid, plegtest.RunningStatus(uid, container.ContainerStateExited))
			}
			g.cacheEvent(ctx, uid, event)
			ps, _, ok := g.opts.Cache.Get(uid)
			if ok != tc.wantExited {
				t.Fatalf("cache holds a status: %v, want %v", ok, tc.wantExited)
			}
			if ok && ps.ContainerStatuses[0].State != container.ContainerStateExited {
				t.Errorf("cached container state %s, want the event's exited", ps.ContainerStatuses[0].State)
			}
			if rt.Reads() != 0 {
				t.Errorf("the runtime was read %d times, want none", rt.Reads())
			}
		})
	}
}
