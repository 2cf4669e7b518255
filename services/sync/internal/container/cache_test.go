package container

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const testUID = types.UID("pod-1")

// podStatus returns a status with one sandbox in sbState (none if empty
// sbID) and containers "id=state".
func podStatus(sbID string, sbState runtimeapi.PodSandboxState, containers map[string]State) *PodStatus {
	ps := &PodStatus{ID: testUID}
	if sbID != "" {
		ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{{Id: sbID, State: sbState}}
	}
	for id, st := range containers {
		ps.ContainerStatuses = append(ps.ContainerStatuses, &Status{ID: BuildContainerID("fake", id), Name: id, State: st})
	}
	return ps
}

var (
	ready    = runtimeapi.PodSandboxState_SANDBOX_READY
	notReady = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	t0       = time.Unix(1000, 0)
)

func at(d time.Duration) time.Time { return t0.Add(d) }

// op is one cache operation of a table test.
type op struct {
	set        *PodStatus // Set(status, when)
	event      *PodStatus // SetFromEvent(status, when, received)
	invalidate bool       // Invalidate(when)
	when       time.Time
	received   time.Time
	wantStored bool // for set and event
}

func TestCacheKeepsTheNewestUsableStatus(t *testing.T) {
	empty := podStatus("", 0, nil)
	sbReady := podStatus("sb1", ready, nil)
	created := podStatus("sb1", ready, map[string]State{"c1": ContainerStateCreated})
	running := podStatus("sb1", ready, map[string]State{"c1": ContainerStateRunning})
	exited := podStatus("sb1", ready, map[string]State{"c1": ContainerStateExited})
	sbGone := podStatus("sb1", notReady, nil) // c1 removed
	for _, tc := range []struct {
		desc string
		ops  []op
		// want is the status GetNewerThan(minTime) returns, nil for none.
		minTime time.Time
		want    *PodStatus
	}{
		{
			desc:    "a read is stored",
			ops:     []op{{set: running, when: at(1), wantStored: true}},
			minTime: at(1), want: running,
		},
		{
			desc:    "a status read before minTime is not returned",
			ops:     []op{{set: running, when: at(1), wantStored: true}},
			minTime: at(2), want: nil,
		},
		{
			desc: "a slow read that started earlier does not replace a later one",
			ops: []op{
				{set: running, when: at(5), wantStored: true},
				{set: created, when: at(3), wantStored: false},
			},
			minTime: at(0), want: running,
		},
		{
			desc: "a newer event is stored over a read",
			ops: []op{
				{set: created, when: at(1), wantStored: true},
				{event: running, when: at(2), received: at(2), wantStored: true},
			},
			minTime: at(1), want: running,
		},
		{
			desc: "an event older than the cached read is dropped",
			ops: []op{
				{set: running, when: at(5), wantStored: true},
				{event: created, when: at(4), received: at(6), wantStored: false},
			},
			minTime: at(5), want: running,
		},
		{
			desc: "an event is never the first status of a pod",
			ops: []op{
				{event: running, when: at(2), received: at(2), wantStored: false},
			},
			minTime: at(0), want: nil,
		},
		{
			desc: "a newer event that contradicts the cache invalidates it",
			ops: []op{
				{set: running, when: at(5), wantStored: true},
				// Stamped later but taken before the start.
				{event: created, when: at(6), received: at(7), wantStored: false},
			},
			minTime: at(0), want: nil,
		},
		{
			desc: "after a contradiction, a read that started before the event arrived is refused",
			ops: []op{
				{set: running, when: at(5), wantStored: true},
				{event: created, when: at(6), received: at(7), wantStored: false},
				{set: running, when: at(6), wantStored: false},
				{set: running, when: at(7), wantStored: true},
			},
			minTime: at(0), want: running,
		},
		{
			desc: "a newer event missing a container the cache knows invalidates it",
			ops: []op{
				{set: exited, when: at(1), wantStored: true},
				{event: sbGone, when: at(2), received: at(2), wantStored: false},
			},
			minTime: at(0), want: nil,
		},
		{
			desc: "a read that started after an event arrived replaces it even if the runtime's stamp is later",
			ops: []op{
				{set: sbReady, when: at(1), wantStored: true},
				{event: created, when: at(10), received: at(2), wantStored: true},
				{set: running, when: at(3), wantStored: true},
			},
			minTime: at(3), want: running,
		},
		{
			desc: "a read that started before an event arrived does not replace it",
			ops: []op{
				{set: sbReady, when: at(1), wantStored: true},
				{event: running, when: at(4), received: at(4), wantStored: true},
				{set: created, when: at(3), wantStored: false},
			},
			minTime: at(0), want: running,
		},
		{
			desc: "invalidate drops an older status and refuses older reads",
			ops: []op{
				{set: running, when: at(1), wantStored: true},
				{invalidate: true, when: at(2)},
				{set: running, when: at(1), wantStored: false},
			},
			minTime: at(0), want: nil,
		},
		{
			desc: "invalidate keeps a status read after it",
			ops: []op{
				{set: exited, when: at(3), wantStored: true},
				{invalidate: true, when: at(2)},
			},
			minTime: at(0), want: exited,
		},
		{
			desc: "invalidate of an unknown pod refuses older reads",
			ops: []op{
				{invalidate: true, when: at(2)},
				{set: empty, when: at(1), wantStored: false},
				{set: empty, when: at(2), wantStored: true},
			},
			minTime: at(2), want: empty,
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := NewCache()
			for i, o := range tc.ops {
				switch {
				case o.set != nil:
					if got := c.Set(testUID, o.set, o.when); got != o.wantStored {
						t.Errorf("op %d: Set stored %v, want %v", i, got, o.wantStored)
					}
				case o.event != nil:
					if got := c.SetFromEvent(testUID, o.event, o.when, o.received); got != o.wantStored {
						t.Errorf("op %d: SetFromEvent stored %v, want %v", i, got, o.wantStored)
					}
				case o.invalidate:
					c.Invalidate(testUID, o.when)
				}
			}
			got, _, ok := c.GetNewerThan(testUID, tc.minTime)
			if tc.want == nil {
				if ok {
					t.Fatalf("GetNewerThan returned a status, want none")
				}
				return
			}
			if !ok || got != tc.want {
				t.Fatalf("GetNewerThan = %v (ok %v), want the expected status", got, ok)
			}
		})
	}
}

func TestStatusBehind(t *testing.T) {
	for _, tc := range []struct {
		desc              string
		candidate, cached *PodStatus
		want              bool
	}{
		{
			desc:      "same",
			candidate: podStatus("sb", ready, map[string]State{"a": ContainerStateRunning}),
			cached:    podStatus("sb", ready, map[string]State{"a": ContainerStateRunning}),
			want:      false,
		},
		{
			desc:      "a container moved forward and a new one appeared",
			candidate: podStatus("sb", ready, map[string]State{"a": ContainerStateExited, "b": ContainerStateCreated}),
			cached:    podStatus("sb", ready, map[string]State{"a": ContainerStateRunning}),
			want:      false,
		},
		{
			desc:      "a container moved backwards",
			candidate: podStatus("sb", ready, map[string]State{"a": ContainerStateCreated}),
			cached:    podStatus("sb", ready, map[string]State{"a": ContainerStateRunning}),
			want:      true,
		},
		{
			desc:      "a container is missing",
			candidate: podStatus("sb", ready, nil),
			cached:    podStatus("sb", ready, map[string]State{"a": ContainerStateExited}),
			want:      true,
		},
		{
			desc:      "unknown either way needs a read",
			candidate: podStatus("sb", ready, map[string]State{"a": ContainerStateUnknown}),
			cached:    podStatus("sb", ready, map[string]State{"a": ContainerStateRunning}),
			want:      true,
		},
		{
			desc:      "a sandbox became ready again",
			candidate: podStatus("sb", ready, nil),
			cached:    podStatus("sb", notReady, nil),
			want:      true,
		},
		{
			desc:      "another sandbox: the cached one is missing",
			candidate: podStatus("sb2", ready, nil),
			cached:    podStatus("sb", notReady, nil),
			want:      true,
		},
		{
			desc:      "the first sandbox of a pod that had none",
			candidate: podStatus("sb", ready, nil),
			cached:    podStatus("", 0, nil),
			want:      false,
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := statusBehind(tc.candidate, tc.cached); got != tc.want {
				t.Errorf("statusBehind = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCacheRetainAndDelete(t *testing.T) {
	c := NewCache()
	for _, uid := range []types.UID{"a", "b", "c"} {
		c.Set(uid, &PodStatus{ID: uid}, t0)
	}
	c.Invalidate("d", t0)
	c.Retain(func(uid types.UID) bool { return uid != "b" && uid != "d" })
	c.Delete("c")
	if c.Len() != 1 {
		t.Errorf("Len = %d, want 1", c.Len())
	}
	if _, _, ok := c.Get("a"); !ok {
		t.Error("the kept pod's status is gone")
	}
	for _, uid := range []types.UID{"b", "c", "d"} {
		if _, _, ok := c.Get(uid); ok {
			t.Errorf("pod %s still cached", uid)
		}
	}
}

func TestCacheHas(t *testing.T) {
	for _, tc := range []struct {
		desc string
		fill func(c *Cache)
		want bool
	}{
		{desc: "nothing stored", fill: func(*Cache) {}, want: false},
		{desc: "a status", fill: func(c *Cache) { c.Set("p", &PodStatus{ID: "p"}, time.Now()) }, want: true},
		{desc: "only an invalidation", fill: func(c *Cache) { c.Invalidate("p", time.Now()) }, want: true},
		{desc: "deleted", fill: func(c *Cache) { c.Set("p", &PodStatus{ID: "p"}, time.Now()); c.Delete("p") }, want: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := NewCache()
			tc.fill(c)
			if got := c.Has("p"); got != tc.want {
				t.Errorf("Has = %v, want %v", got, tc.want)
			}
		})
	}
}
