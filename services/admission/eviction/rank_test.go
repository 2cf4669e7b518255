package eviction

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

func TestRanking(t *testing.T) {
	// withVolumes adds node-local volume usage to disk stats.
	withVolumes := func(s PodStats, used string) PodStats {
		s.LocalVolumes.UsedBytes = mustBytes(used)
		return s
	}
	tests := []struct {
		desc      string
		signal    Signal
		dedicated bool
		pods      []*v1.Pod
		stats     []PodStats
		want      []string
	}{
		{
			desc:   "memory: over request, then priority, then usage above request",
			signal: SignalMemoryAvailable,
			pods: []*v1.Pod{
				testPod("guaranteed-under", requests(v1.ResourceMemory, "2Gi")),
				testPod("burstable-over-high", prio(100), requests(v1.ResourceMemory, "100Mi")),
				testPod("besteffort-small"),
				testPod("besteffort-big"),
			},
			stats: []PodStats{
				memStats("guaranteed-under", "1Gi"), memStats("burstable-over-high", "3Gi"),
				memStats("besteffort-small", "10Mi"), memStats("besteffort-big", "500Mi"),
			},
			want: []string{"besteffort-big", "besteffort-small", "burstable-over-high", "guaranteed-under"},
		},
		{
			desc:   "memory: pods under request rank by priority, then by how far under",
			signal: SignalMemoryAvailable,
			pods: []*v1.Pod{
				testPod("far-under", requests(v1.ResourceMemory, "4Gi")),
				testPod("near-under", requests(v1.ResourceMemory, "1Gi")),
				testPod("low-prio", prio(-5), requests(v1.ResourceMemory, "8Gi")),
			},
			stats: []PodStats{memStats("far-under", "1Gi"), memStats("near-under", "900Mi"), memStats("low-prio", "1Mi")},
			want:  []string{"low-prio", "near-under", "far-under"},
		},
		{
			desc:   "memory: pods without stats first, in input order",
			signal: SignalMemoryAvailable,
			pods:   []*v1.Pod{testPod("measured"), testPod("x"), testPod("y")},
			stats:  []PodStats{memStats("measured", "5Gi")},
			want:   []string{"x", "y", "measured"},
		},
		{
			desc:   "memory: init container request counts when larger",
			signal: SignalMemoryAvailable,
			pods: []*v1.Pod{
				func() *v1.Pod {
					p := testPod("init-covers")
					p.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{
						Requests: v1.ResourceList{v1.ResourceMemory: mustQuantity("2Gi")}}}}
					return p
				}(),
				testPod("plain", requests(v1.ResourceMemory, "100Mi")),
			},
			stats: []PodStats{memStats("init-covers", "1Gi"), memStats("plain", "200Mi")},
			want:  []string{"plain", "init-covers"},
		},
		{
			desc:   "pid: priority first, then most processes",
			signal: SignalPIDAvailable,
			pods:   []*v1.Pod{testPod("high-many", prio(10)), testPod("low-few"), testPod("low-many")},
			stats:  []PodStats{pidStats("high-many", 9000), pidStats("low-few", 3), pidStats("low-many", 300)},
			want:   []string{"low-many", "low-few", "high-many"},
		},
		{
			desc:   "nodefs on one filesystem counts rootfs, logs and volumes",
			signal: SignalNodeFsAvailable,
			pods: []*v1.Pod{
				testPod("rootfs-heavy", requests(v1.ResourceEphemeralStorage, "1Gi")),
				testPod("volume-heavy", requests(v1.ResourceEphemeralStorage, "1Gi")),
			},
			stats: []PodStats{
				diskStats("rootfs-heavy", "5Gi", "0"),
				withVolumes(diskStats("volume-heavy", "0", "0"), "3Gi"),
			},
			want: []string{"rootfs-heavy", "volume-heavy"},
		},
		{
			desc:      "nodefs with a dedicated imagefs ignores writable layers",
			signal:    SignalNodeFsAvailable,
			dedicated: true,
			pods: []*v1.Pod{
				testPod("rootfs-heavy", requests(v1.ResourceEphemeralStorage, "1Gi")),
				testPod("volume-heavy", requests(v1.ResourceEphemeralStorage, "1Gi")),
			},
			stats: []PodStats{
				diskStats("rootfs-heavy", "5Gi", "0"),
				withVolumes(diskStats("volume-heavy", "0", "0"), "3Gi"),
			},
			want: []string{"volume-heavy", "rootfs-heavy"},
		},
		{
			desc:      "dedicated imagefs counts writable layers only",
			signal:    SignalImageFsAvailable,
			dedicated: true,
			pods:      []*v1.Pod{testPod("logs-heavy"), testPod("rootfs-heavy")},
			stats:     []PodStats{diskStats("logs-heavy", "1Mi", "9Gi"), diskStats("rootfs-heavy", "2Gi", "0")},
			want:      []string{"rootfs-heavy", "logs-heavy"},
		},
		{
			desc:   "inodes: every pod using inodes exceeds its (absent) request; lower priority first",
			signal: SignalNodeFsInodesFree,
			pods:   []*v1.Pod{testPod("high", prio(5)), testPod("low")},
			stats: []PodStats{
				{UID: "high", Containers: []ContainerStats{{Name: "c", Rootfs: FsUsage{InodesUsed: 90000}}}},
				{UID: "low", Containers: []ContainerStats{{Name: "c", Rootfs: FsUsage{InodesUsed: 10}}}},
			},
			want: []string{"low", "high"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			rank := buildSignalToRankFunc(tc.dedicated)[tc.signal]
			pods := slices.Clone(tc.pods)
			rank(pods, cachedStatsFunc(tc.stats))
			var got []string
			for _, p := range pods {
				got = append(got, p.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("rank = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEvictionMessageAnnotations(t *testing.T) {
	pod := testPod("web", requests(v1.ResourceMemory, "1Gi"))
	pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "sidecar", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceMemory: mustQuantity("512Mi")}}})
	stats := PodStats{UID: types.UID("web"), Containers: []ContainerStats{
		{Name: "c", MemoryWorkingSetBytes: mustBytes("2Gi")},
		{Name: "sidecar", MemoryWorkingSetBytes: mustBytes("100Mi")},
	}}
	thresholds := mustThresholdsNoT(ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}})
	obs := map[Signal]SignalObservation{SignalMemoryAvailable: signal("50Mi", "8Gi")}
	msg, ann := evictionMessage(v1.ResourceMemory, pod, cachedStatsFunc([]PodStats{stats}), thresholds, obs)
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. " +
		"Container c was using 2Gi, request is 1Gi, has larger consumption of memory. "
	if msg != want {
		t.Errorf("message:\n got %q\nwant %q", msg, want)
	}
	wantAnn := map[string]string{
		OffendingContainersKey: "c", OffendingContainersUsageKey: "2Gi", StarvedResourceKey: "memory",
	}
	for k, v := range wantAnn {
		if ann[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, ann[k], v)
		}
	}
}

func mustQuantity(s string) resource.Quantity {
	return resource.MustParse(s)
}

func mustThresholdsNoT(cfg ThresholdConfig) []Threshold {
	ts, err := ParseThresholdConfig(cfg)
	if err != nil {
		panic(err)
	}
	return ts
}
