package cm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/cgroups"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func resources(req, lim string) v1.ResourceRequirements {
	parse := func(s string) v1.ResourceList {
		out := v1.ResourceList{}
		for _, kv := range strings.Split(s, ",") {
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			out[v1.ResourceName(k)] = resource.MustParse(v)
		}
		return out
	}
	return v1.ResourceRequirements{Requests: parse(req), Limits: parse(lim)}
}

func podWith(containers ...v1.ResourceRequirements) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	for i, r := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprint("c", i), Resources: r})
	}
	return pod
}

// describe renders a ResourceConfig as "shares quota/period memory",
// "-" for an unset field.
func describe(c ResourceConfig) string {
	f := func(p any) string {
		switch v := p.(type) {
		case *uint64:
			if v != nil {
				return fmt.Sprint(*v)
			}
		case *int64:
			if v != nil {
				return fmt.Sprint(*v)
			}
		}
		return "-"
	}
	return fmt.Sprintf("%s %s/%s %s", f(c.CPUShares), f(c.CPUQuota), f(c.CPUPeriod), f(c.Memory))
}

func TestResourceConfigForPod(t *testing.T) {
	withInit := podWith(resources("cpu=100m,memory=64Mi", "cpu=200m,memory=128Mi"))
	withInit.Spec.InitContainers = []v1.Container{{Name: "init", Resources: resources("cpu=1,memory=256Mi", "cpu=1,memory=256Mi")}}
	podLevel := podWith(resources("cpu=100m", ""), resources("", ""))
	podLevel.Spec.Resources = &v1.ResourceRequirements{Requests: resources("cpu=500m,memory=100Mi", "").Requests,
		Limits: resources("", "cpu=1,memory=200Mi").Limits}
	overhead := podWith(resources("cpu=1,memory=1Gi", "cpu=1,memory=1Gi"))
	overhead.Spec.Overhead = resources("cpu=250m,memory=120Mi", "").Requests
	initNoLimit := podWith(resources("cpu=100m,memory=64Mi", "cpu=200m,memory=128Mi"))
	initNoLimit.Spec.InitContainers = []v1.Container{{Name: "init", Resources: resources("cpu=100m", "")}}
	for _, tc := range []struct {
		desc    string
		pod     *v1.Pod
		enforce bool
		want    string
	}{
		{desc: "Guaranteed: shares, quota and memory from the sums", enforce: true,
			pod:  podWith(resources("cpu=500m,memory=64Mi", "cpu=500m,memory=64Mi"), resources("cpu=250m,memory=32Mi", "cpu=250m,memory=32Mi")),
			want: fmt.Sprintf("768 75000/100000 %d", 96<<20)},
		{desc: "Guaranteed without CFS quotas", enforce: false,
			pod:  podWith(resources("cpu=1,memory=64Mi", "cpu=1,memory=64Mi")),
			want: fmt.Sprintf("1024 -1/100000 %d", 64<<20)},
		{desc: "Burstable, every container limited", enforce: true,
			pod:  podWith(resources("cpu=100m,memory=32Mi", "cpu=200m,memory=64Mi"), resources("cpu=100m", "cpu=300m,memory=64Mi")),
			want: fmt.Sprintf("204 50000/100000 %d", 128<<20)},
		{desc: "Burstable, a container without limits: shares only", enforce: true,
			pod:  podWith(resources("cpu=100m,memory=32Mi", "cpu=200m,memory=64Mi"), resources("cpu=100m", "")),
			want: "204 -/- -"},
		{desc: "BestEffort: the minimum shares", enforce: true, pod: podWith(resources("", "")), want: "2 -/- -"},
		{desc: "an init container bigger than the containers", enforce: true, pod: withInit,
			want: fmt.Sprintf("1024 100000/100000 %d", 256<<20)},
		{desc: "an init container without limits", enforce: true, pod: initNoLimit, want: "102 -/- -"},
		{desc: "pod-level resources win over the containers'", enforce: true, pod: podLevel,
			want: fmt.Sprintf("512 100000/100000 %d", 200<<20)},
		{desc: "overhead added", enforce: true, pod: overhead,
			want: fmt.Sprintf("1280 125000/100000 %d", 1<<30+120<<20)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := describe(ResourceConfigForPod(tc.pod, tc.enforce, 100000)); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestHugePages(t *testing.T) {
	pod := podWith(resources("hugepages-2Mi=4Mi,memory=64Mi", "hugepages-2Mi=4Mi,memory=64Mi"))
	cfg := ResourceConfigForPod(pod, true, 100000)
	if len(cfg.HugePageLimit) != 1 || cfg.HugePageLimit[2<<20] != 4<<20 {
		t.Fatalf("huge page limits %v, want 2 MiB pages limited to 4 MiB", cfg.HugePageLimit)
	}
	for size, want := range map[int64]string{2 << 20: "2MB", 1 << 30: "1GB", 64 << 10: "64KB"} {
		if got, err := hugePageSizeName(size); got != want || err != nil {
			t.Errorf("hugePageSizeName(%d) = %q, %v; want %s", size, got, err, want)
		}
	}
	if _, err := hugePageSizeName(1000); err == nil {
		t.Error("1000 bytes named as a huge page size")
	}
}

func TestCPUWeight(t *testing.T) {
	for shares, weight := range map[uint64]uint64{2: 1, 1024: 39, 262144: 10000, 300000: 10000} {
		if got := cpuWeight(shares); got != weight {
			t.Errorf("cpuWeight(%d) = %d, want %d", shares, got, weight)
		}
	}
	for weight, shares := range map[uint64]uint64{1: 2, 39: 998, 10000: 262144} {
		if got := sharesFromWeight(weight); got != shares {
			t.Errorf("sharesFromWeight(%d) = %d, want %d", weight, got, shares)
		}
	}
}

// On the machine's cgroupfs, as root: EnsureExists makes the pod cgroup
// with its limits, leaves an existing one alone, Set changes it and Current
// reads it back. The cgroup is under a parent of the test's own, removed
// after.
func TestPodContainerManagerOnCgroupfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creates cgroups: needs root")
	}
	if err := Writable("/sys/fs/cgroup"); err != nil {
		t.Skipf("creates cgroups: the cgroupfs is not writable here: %v", err)
	}
	parent := fmt.Sprintf("/splitlet-cm-test-%d", os.Getpid())
	pod := podWith(resources("cpu=500m,memory=64Mi", "cpu=500m,memory=64Mi"))
	pod.UID = types.UID("u-" + fmt.Sprint(os.Getpid()))
	name := func(p *v1.Pod) string { return parent + "/pod" + string(p.UID) }
	m := NewPodContainerManager(name, true, 100000, nil)
	t.Cleanup(func() { removeTree(t, parent) })

	if err := m.EnsureExists(pod); err != nil {
		t.Fatal(err)
	}
	got, err := m.Current(pod)
	if err != nil {
		t.Fatal(err)
	}
	if *got.CPUQuota != 50000 || *got.Memory != 64<<20 || *got.CPUShares != 512 {
		t.Fatalf("created with %s, want quota 50000, shares 512, memory %d", describe(got), 64<<20)
	}
	// An existing cgroup is not changed by EnsureExists.
	bigger := podWith(resources("cpu=1,memory=128Mi", "cpu=1,memory=128Mi"))
	bigger.UID = pod.UID
	if err := m.EnsureExists(bigger); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Current(pod); *got.Memory != 64<<20 {
		t.Fatalf("EnsureExists changed an existing cgroup: %s", describe(got))
	}
	if err := m.Set(pod, m.ResourceConfig(bigger)); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Current(pod); *got.CPUQuota != 100000 || *got.Memory != 128<<20 || *got.CPUShares != 1024 {
		t.Fatalf("after Set: %s, want quota 100000, shares 1024, memory %d", describe(got), 128<<20)
	}
}

// removeTree removes the cgroup dir and its children in every hierarchy,
// deepest first (cgroupfs only takes rmdir).
func removeTree(t testing.TB, name string) {
	roots := []string{"/sys/fs/cgroup"}
	if !cgroups.IsCgroup2UnifiedMode() {
		entries, _ := os.ReadDir("/sys/fs/cgroup")
		roots = roots[:0]
		for _, e := range entries {
			if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
				roots = append(roots, filepath.Join("/sys/fs/cgroup", e.Name()))
			}
		}
	}
	for _, r := range roots {
		dir := filepath.Join(r, name)
		subs, _ := os.ReadDir(dir)
		for _, s := range subs {
			if s.IsDir() {
				_ = os.Remove(filepath.Join(dir, s.Name()))
			}
		}
		if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
			t.Errorf("removing test cgroup: %v", err)
		}
	}
}

// BenchmarkEnsureExists is what a new pod's cgroup costs sync (root, a
// writable cgroupfs): EnsureExists of a Guaranteed pod (the cgroup is
// removed between iterations, outside the timing).
func BenchmarkEnsureExists(b *testing.B) {
	if os.Geteuid() != 0 || Writable(MountRoot) != nil {
		b.Skip("creates cgroups: needs root and a writable cgroupfs")
	}
	parent := fmt.Sprintf("/splitlet-cm-bench-%d", os.Getpid())
	m := NewPodContainerManager(func(p *v1.Pod) string { return parent + "/pod" + string(p.UID) }, true, 100000, nil)
	pod := podWith(resources("cpu=500m,memory=64Mi", "cpu=500m,memory=64Mi"))
	b.Cleanup(func() { removeTree(b, parent) })
	b.ResetTimer()
	for i := range b.N {
		pod.UID = types.UID(fmt.Sprint("b", i))
		if err := m.EnsureExists(pod); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		removeTree(b, parent+"/pod"+string(pod.UID))
		b.StartTimer()
	}
}
