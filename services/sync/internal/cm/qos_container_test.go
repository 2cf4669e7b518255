package cm

import (
	"fmt"
	"os"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestHugePageSizeBytes(t *testing.T) {
	for name, want := range map[string]int64{"2MB": 2 << 20, "1GB": 1 << 30, "64KB": 64 << 10} {
		if got, err := hugePageSizeBytes(name); got != want || err != nil {
			t.Errorf("hugePageSizeBytes(%q) = %d, %v; want %d", name, got, err, want)
		}
		if back, _ := hugePageSizeName(want); back != name {
			t.Errorf("hugePageSizeName(%d) = %q, want %q", want, back, name)
		}
	}
	for _, bad := range []string{"2", "MB", "-1MB", "xKB"} {
		if _, err := hugePageSizeBytes(bad); err == nil {
			t.Errorf("hugePageSizeBytes(%q) read as a size", bad)
		}
	}
}

// On the machine's cgroupfs, as root, under a root of the test's own
// rather than /kubepods: Start gives the BestEffort tier the minimum
// shares, Update the Burstable tier its pods' summed CPU requests (only
// Burstable pods count), and a pod cgroup made afterwards counts its pod.
func TestQOSContainerManagerOnCgroupfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creates cgroups: needs root")
	}
	if err := Writable(MountRoot); err != nil {
		t.Skipf("creates cgroups: the cgroupfs is not writable here: %v", err)
	}
	root := fmt.Sprintf("/splitlet-qos-test-%d", os.Getpid())
	t.Cleanup(func() {
		for _, dir := range []string{root + "/burstable", root + "/besteffort", root} {
			removeTree(t, dir)
		}
	})
	var mu sync.Mutex
	var active []*v1.Pod
	m := NewQOSContainerManager(root, func() []*v1.Pod { mu.Lock(); defer mu.Unlock(); return active })
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	shares := func(name string) uint64 {
		t.Helper()
		got, err := NewPodContainerManager(func(*v1.Pod) string { return name }, true, 100000, nil).Current(&v1.Pod{})
		if err != nil {
			t.Fatal(err)
		}
		return *got.CPUShares
	}
	if got := shares(root + "/besteffort"); got != MinShares && got != sharesFromWeight(cpuWeight(MinShares)) {
		t.Errorf("besteffort shares %d after Start, want %d", got, MinShares)
	}

	burstable := podWith(resources("cpu=300m", "cpu=1"), resources("cpu=200m", ""))
	burstable.UID = "b1"
	guaranteed := podWith(resources("cpu=2,memory=64Mi", "cpu=2,memory=64Mi"))
	mu.Lock()
	active = []*v1.Pod{burstable, guaranteed, podWith(resources("", ""))}
	mu.Unlock()
	if err := m.Update(); err != nil {
		t.Fatal(err)
	}
	want := uint64(MilliCPUToShares(500))
	if got := shares(root + "/burstable"); got != want && got != sharesFromWeight(cpuWeight(want)) {
		t.Errorf("burstable shares %d, want %d (500m of Burstable requests)", got, want)
	}

	// A new Burstable pod's cgroup: the tier is updated first.
	second := podWith(resources("cpu=1", "cpu=2"))
	second.UID = "b2"
	mu.Lock()
	active = append(active, second)
	mu.Unlock()
	pcm := NewPodContainerManager(func(p *v1.Pod) string { return root + "/burstable/pod" + string(p.UID) }, true, 100000, m)
	t.Cleanup(func() { removeTree(t, root+"/burstable/podb2") })
	if err := pcm.EnsureExists(second); err != nil {
		t.Fatal(err)
	}
	want = uint64(MilliCPUToShares(1500))
	if got := shares(root + "/burstable"); got != want && got != sharesFromWeight(cpuWeight(want)) {
		t.Errorf("burstable shares %d after the new pod, want %d", got, want)
	}
}
