package allocation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// The runtime manager keeps its actuated records here.
var _ kuberuntime.ActuatedStore = (*Manager)(nil)

func requests(cpu, mem string) v1.ResourceRequirements {
	return v1.ResourceRequirements{Requests: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem),
	}}
}

func testPod(uid types.UID, r v1.ResourceRequirements) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: uid, Name: string(uid), Namespace: "ns", Generation: 2},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c1", Image: "i1", Resources: r}}},
	}
}

// nodeFit is the predicate admission's resource fit on a node of 4 CPUs
// and 4Gi with other pods using 2 CPUs and 2Gi, as in the kubelet's
// TestRetryPendingResizes.
func nodeFit(pod *v1.Pod) (bool, string, string, error) {
	var cpu, mem int64
	for _, c := range pod.Spec.Containers {
		cpu += c.Resources.Requests.Cpu().MilliValue()
		mem += c.Resources.Requests.Memory().Value()
	}
	const usedCPU, usedMem, capCPU, capMem = 2000, 2 << 30, 4000, 4 << 30
	switch {
	case cpu+usedCPU > capCPU:
		return false, "OutOfcpu", fmt.Sprintf("Node didn't have enough resource: cpu, requested: %d, used: %d, capacity: %d", cpu, usedCPU, capCPU), nil
	case mem+usedMem > capMem:
		return false, "OutOfmemory", fmt.Sprintf("Node didn't have enough resource: memory, requested: %d, used: %d, capacity: %d", mem, usedMem, capMem), nil
	}
	return true, "", "", nil
}

// TestHandlePodResourcesResize ports the container rows of the kubelet's
// TestRetryPendingResizes: a resize that fits becomes the allocation, one
// that does not waits as Deferred (any admit reason but Infeasible).
func TestHandlePodResourcesResize(t *testing.T) {
	for _, tc := range []struct {
		desc          string
		newRequests   v1.ResourceRequirements
		fit           FitFunc
		wantAllocated bool
		wantReason    string // of PodResizePending; empty for none
		wantMessage   string
	}{
		{desc: "request CPU and memory decrease", newRequests: requests("500m", "500Mi"), wantAllocated: true},
		{desc: "request CPU increase, memory decrease", newRequests: requests("1500m", "500Mi"), wantAllocated: true},
		{desc: "request CPU decrease, memory increase", newRequests: requests("500m", "1500Mi"), wantAllocated: true},
		{desc: "request CPU and memory increase beyond current capacity", newRequests: requests("2500m", "2500Mi"),
			wantReason: v1.PodReasonDeferred, wantMessage: "Node didn't have enough resource: cpu, requested: 2500, used: 2000, capacity: 4000"},
		{desc: "request memory increase beyond node capacity", newRequests: requests("1", "4500Mi"),
			wantReason: v1.PodReasonDeferred, wantMessage: "Node didn't have enough resource: memory, requested: 4718592000, used: 2147483648, capacity: 4294967296"},
		{desc: "request CPU increase beyond node capacity", newRequests: requests("5", "1Gi"),
			wantReason: v1.PodReasonDeferred, wantMessage: "Node didn't have enough resource: cpu, requested: 5000, used: 2000, capacity: 4000"},
		{desc: "no resize", newRequests: requests("1", "1Gi")},
		{desc: "an admit handler's Infeasible stays Infeasible", newRequests: requests("2", "1Gi"),
			fit:        func(*v1.Pod) (bool, string, string, error) { return false, v1.PodReasonInfeasible, "no", nil },
			wantReason: v1.PodReasonInfeasible, wantMessage: "no"},
		{desc: "no answer: Deferred", newRequests: requests("2", "1Gi"),
			fit:        func(*v1.Pod) (bool, string, string, error) { return false, "", "", errors.New("admission unavailable") },
			wantReason: v1.PodReasonDeferred, wantMessage: "admission unavailable"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			m, err := New("")
			if err != nil {
				t.Fatal(err)
			}
			original := testPod("1111", requests("1", "1Gi"))
			if _, err := m.AddPod(original); err != nil {
				t.Fatal(err)
			}
			resized := testPod("1111", tc.newRequests)
			fit := tc.fit
			if fit == nil {
				fit = nodeFit
			}
			allocated, err := m.HandlePodResourcesResize(resized, fit)
			if err != nil || allocated != tc.wantAllocated {
				t.Fatalf("HandlePodResourcesResize = %t, %v; want %t", allocated, err, tc.wantAllocated)
			}
			got, _ := m.UpdatePodFromAllocation(resized)
			want := original
			if tc.wantAllocated {
				want = resized
			}
			if g, w := got.Spec.Containers[0].Resources.Requests, want.Spec.Containers[0].Resources.Requests; !g.Cpu().Equal(*w.Cpu()) || !g.Memory().Equal(*w.Memory()) {
				t.Errorf("allocated requests = %v, want %v", g, w)
			}
			c, pending := m.PodResizePending("1111")
			switch {
			case tc.wantReason == "" && pending:
				t.Errorf("PodResizePending = %+v, want none", c)
			case tc.wantReason != "" && (!pending || c.Reason != tc.wantReason || c.Message != tc.wantMessage || c.ObservedGeneration != 2 || c.Status != v1.ConditionTrue):
				t.Errorf("PodResizePending = %+v (%t), want %s %q at generation 2", c, pending, tc.wantReason, tc.wantMessage)
			}
			wantRetried := tc.wantReason == v1.PodReasonDeferred
			if retried := len(m.PendingResizes()) == 1; retried != wantRetried {
				t.Errorf("pending resizes = %v, want retried %t", m.PendingResizes(), wantRetried)
			}

			// Reverting the spec to the allocation clears a pending resize.
			if _, err := m.HandlePodResourcesResize(original, fit); err != nil {
				t.Fatal(err)
			}
			if !tc.wantAllocated {
				if c, ok := m.PodResizePending("1111"); ok {
					t.Errorf("PodResizePending = %+v after the revert, want none", c)
				}
			}
		})
	}
}

// TestAllocationsSurviveARestart: allocations and actuated records are
// read back by a new Manager on the same file; AddPod of a known pod keeps
// its allocation; removed pods are forgotten.
func TestAllocationsSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "allocated-pods.json")
	m, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod("1111", requests("1", "1Gi"))
	other := testPod("2222", requests("1", "1Gi"))
	for _, p := range []*v1.Pod{pod, other} {
		if _, err := m.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	resized := testPod("1111", requests("500m", "1Gi"))
	if ok, err := m.HandlePodResourcesResize(resized, nodeFit); !ok || err != nil {
		t.Fatalf("resize = %t, %v", ok, err)
	}
	if err := m.SetActuatedResources("1111", "cid", requests("500m", "1Gi")); err != nil {
		t.Fatal(err)
	}

	m2, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	// The source still has the original spec (e.g. a sync restart raced
	// the update): the granted allocation stands.
	got, err := m2.AddPod(pod)
	if err != nil {
		t.Fatal(err)
	}
	if cpu := got.Spec.Containers[0].Resources.Requests.Cpu().String(); cpu != "500m" {
		t.Errorf("allocated cpu after restart = %s, want 500m", cpu)
	}
	if r, ok := m2.ActuatedResources("1111", "cid"); !ok || r.Requests.Cpu().String() != "500m" {
		t.Errorf("actuated after restart = %+v (%t), want 500m", r, ok)
	}

	if err := m2.RemoveOrphanedPods(func(uid types.UID) bool { return uid == "2222" }); err != nil {
		t.Fatal(err)
	}
	m3, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m3.ActuatedResources("1111", "cid"); ok {
		t.Errorf("a removed pod's actuated record survived")
	}
	if p, updated := m3.UpdatePodFromAllocation(resized); updated || p != resized {
		t.Errorf("a removed pod still has an allocation")
	}
	if _, updated := m3.UpdatePodFromAllocation(testPod("2222", requests("2", "1Gi"))); !updated {
		t.Errorf("the kept pod lost its allocation")
	}
}

// TestCorruptFileStartsEmpty: an unreadable store is reported, and the
// Manager works from nothing.
func TestCorruptFileStartsEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "allocated-pods.json")
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := New(path)
	if err == nil {
		t.Fatalf("New on a corrupt file: no error")
	}
	if _, err := m.AddPod(testPod("1111", requests("1", "1Gi"))); err != nil {
		t.Errorf("AddPod after a corrupt file: %v", err)
	}
}

// TestSortPendingResizes ports the kubelet's TestSortPendingResizes: a
// resize that does not raise requests first, then priority, then
// Guaranteed, then the longest deferred.
func TestSortPendingResizes(t *testing.T) {
	m, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	refuse := func(*v1.Pod) (bool, string, string, error) { return false, "OutOfcpu", "no", nil }
	high := int32(100)
	var pods []*v1.Pod
	add := func(uid types.UID, from, to v1.ResourceRequirements, mutate func(*v1.Pod)) {
		p := testPod(uid, from)
		if mutate != nil {
			mutate(p)
		}
		if _, err := m.AddPod(p); err != nil {
			t.Fatal(err)
		}
		resized := p.DeepCopy()
		resized.Spec.Containers[0].Resources = to
		if _, err := m.HandlePodResourcesResize(resized, refuse); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, resized)
	}
	guaranteed := func(cpu, mem string) v1.ResourceRequirements {
		r := requests(cpu, mem)
		r.Limits = r.Requests.DeepCopy()
		return r
	}
	// In the order they were deferred.
	add("burstable-old", requests("1", "1Gi"), requests("2", "1Gi"), nil)
	add("burstable-new", requests("1", "1Gi"), requests("2", "1Gi"), nil)
	add("guaranteed", guaranteed("1", "1Gi"), guaranteed("2", "1Gi"), nil)
	add("high-priority", requests("1", "1Gi"), requests("2", "1Gi"), func(p *v1.Pod) { p.Spec.Priority = &high })
	add("shrinking", requests("2", "1Gi"), requests("1", "1Gi"), nil)

	slices.Reverse(pods)
	m.SortPendingResizes(pods)
	var got []types.UID
	for _, p := range pods {
		got = append(got, p.UID)
	}
	want := []types.UID{"shrinking", "high-priority", "guaranteed", "burstable-old", "burstable-new"}
	if !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}

// BenchmarkUpdatePodFromAllocation is the allocation lookup every batch of
// admissions makes for every active pod (the kubelet's getAllocatedPods):
// a pod whose allocation is what its spec asks, so nothing is copied.
func BenchmarkUpdatePodFromAllocation(b *testing.B) {
	m, err := New("")
	if err != nil {
		b.Fatal(err)
	}
	pod := testPod("uid-a", requests("100m", "64Mi"))
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Image: "i0", Resources: requests("50m", "32Mi")}}
	if _, err := m.AddPod(pod); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if got, updated := m.UpdatePodFromAllocation(pod); updated || got != pod {
			b.Fatal("the pod was copied though its allocation is its spec")
		}
	}
}

// TestUpdatePodsFromAllocation: the batch answers what
// UpdatePodFromAllocation answers pod by pod, in place.
func TestUpdatePodsFromAllocation(t *testing.T) {
	m, err := New(filepath.Join(t.TempDir(), "allocated-pods.json"))
	if err != nil {
		t.Fatal(err)
	}
	same := testPod("1111", requests("1", "1Gi"))
	granted := testPod("2222", requests("1", "1Gi"))
	for _, p := range []*v1.Pod{same, granted} {
		if _, err := m.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	asked := testPod("2222", requests("2", "1Gi")) // a resize not granted
	unknown := testPod("3333", requests("1", "1Gi"))
	pods := []*v1.Pod{same, asked, unknown}
	want := make([]*v1.Pod, len(pods))
	for i, p := range pods {
		want[i], _ = m.UpdatePodFromAllocation(p)
	}
	m.UpdatePodsFromAllocation(pods)
	for i, p := range pods {
		if p != want[i] && !apiequality.Semantic.DeepEqual(p, want[i]) {
			t.Errorf("pod %d = %v, want %v", i, p.Spec.Containers[0].Resources, want[i].Spec.Containers[0].Resources)
		}
	}
	if pods[0] != same || pods[2] != unknown {
		t.Error("a pod whose allocation matches, or with none, was replaced")
	}
	if cpu := pods[1].Spec.Containers[0].Resources.Requests.Cpu().String(); cpu != "1" || asked.Spec.Containers[0].Resources.Requests.Cpu().String() != "2" {
		t.Errorf("the resized pod's cpu = %s (its spec's left %s), want the allocation's 1 on a copy", cpu, asked.Spec.Containers[0].Resources.Requests.Cpu())
	}
}
