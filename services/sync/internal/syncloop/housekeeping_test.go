package syncloop

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/source"
	"github.com/splitlet/splitlet/services/sync/internal/worker"
)

func TestHandlePodCleanups(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := newFakeRuntime()
	rt.pods = map[types.UID]*kuberuntime.RunningPod{
		"desired": {UID: "desired", Managed: true},
		"orphan":  {UID: "orphan", Name: "o", Namespace: "default", Managed: true},
		"foreign": {UID: "foreign", Name: "kubelets", Namespace: "default"},
	}
	pm := podmanager.New()
	cgroups := &fakeCgroups{failFirst: true}
	k := New(Options{PodCgroups: cgroups}, source.NewPodConfig(), pm, rt, &fakeCRI{})
	k.workers = worker.New(ctx, k, time.Hour, time.Hour, nil)
	pm.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "desired", Name: "d", Namespace: "default"}})

	k.HandlePodCleanups(ctx)
	waitFor(t, "the orphan is killed", func() bool {
		killed, _ := rt.state("orphan")
		return killed && k.workers.IsPodKnownTerminated("orphan")
	})
	// The worker finishes (SyncTerminatedPod) right after; the next
	// housekeeping pass forgets it and removes the leftovers.
	waitFor(t, "the orphan's leftovers are removed", func() bool {
		k.HandlePodCleanups(ctx)
		_, removed := rt.state("orphan")
		return removed
	})
	// The cached listing still shows the removed orphan: it must not be
	// killed again.
	k.HandlePodCleanups(ctx)
	if k.workers.IsKnown("orphan") {
		t.Error("a removed orphan got a kill worker again from a cached listing")
	}
	for _, uid := range []types.UID{"desired", "foreign"} {
		if killed, removed := rt.state(uid); killed || removed {
			t.Errorf("pod %s: killed %v removed %v, want untouched", uid, killed, removed)
		}
	}
	// The removed orphan's cgroups: the first try failed (not empty yet),
	// the next pass tried again and succeeded, and no pass tries after
	// that. No other pod's cgroups are touched.
	k.HandlePodCleanups(ctx)
	if got := cgroups.calls; !reflect.DeepEqual(got, []types.UID{"orphan", "orphan"}) {
		t.Errorf("cgroup removals = %v, want the orphan's twice (a failure, then a retry)", got)
	}
}

// fakeCgroups records Remove calls; with failFirst the first one fails.
type fakeCgroups struct {
	failFirst bool
	calls     []types.UID
}

func (f *fakeCgroups) Remove(uid types.UID) error {
	f.calls = append(f.calls, uid)
	if f.failFirst && len(f.calls) == 1 {
		return errors.New("device or resource busy")
	}
	return nil
}

// Housekeeping neither collects garbage nor lists the node on every pass.
func TestHandlePodCleanupsListsAtMostOncePerCachePeriod(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := newFakeRuntime()
	k := New(Options{}, source.NewPodConfig(), podmanager.New(), rt, &fakeCRI{})
	k.workers = worker.New(ctx, k, time.Hour, time.Hour, nil)
	for range 10 {
		k.HandlePodCleanups(ctx)
	}
	if lists, gcs := rt.counts(); lists != 1 || gcs != 0 {
		t.Errorf("10 quick housekeeping passes: %d node listings, %d garbage collections; want 1 and 0", lists, gcs)
	}
}

// The container GC runs at start and then once per ContainerGCPeriod.
func TestRunContainerGCRunsOncePerPeriod(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const period = 50 * time.Millisecond
	rt := newFakeRuntime()
	k := New(Options{ContainerGCPeriod: period}, source.NewPodConfig(), podmanager.New(), rt, &fakeCRI{})
	start := time.Now()
	go k.runContainerGC(ctx)
	waitFor(t, "the container GC ran three times", func() bool {
		_, gcs := rt.counts()
		return gcs >= 3
	})
	// The first run is immediate, each later one waits a period.
	if elapsed := time.Since(start); elapsed < 2*period {
		t.Errorf("3 garbage collections within %s, faster than one per %s", elapsed, period)
	}
}

// A PLEG relist feeds housekeeping's listing: an orphan it listed is
// killed without housekeeping listing the node itself.
func TestRelistFeedsOrphanScan(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := newFakeRuntime()
	cri := &fakeCRI{Sandboxes: []*runtimeapi.PodSandbox{{
		Id: "s1", State: runtimeapi.PodSandboxState_SANDBOX_READY,
		Labels:      map[string]string{kuberuntime.KubernetesPodUIDLabel: "orphan", kuberuntime.KubernetesPodNameLabel: "o", kuberuntime.KubernetesPodNamespaceLabel: "default"},
		Annotations: map[string]string{kuberuntime.ManagedByAnnotation: kuberuntime.ManagedByValue},
	}}}
	k := New(Options{}, source.NewPodConfig(), podmanager.New(), rt, cri)
	k.workers = worker.New(ctx, k, time.Hour, time.Hour, nil)
	k.pleg.Relist(ctx)
	k.HandlePodCleanups(ctx)
	if lists, _ := rt.counts(); lists != 0 {
		t.Errorf("housekeeping listed the node %d times after a fresh relist, want 0", lists)
	}
	waitFor(t, "the orphan the relist listed is killed", func() bool {
		killed, _ := rt.state("orphan")
		return killed
	})
}
