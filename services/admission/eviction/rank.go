package eviction

import (
	"cmp"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// rankFunc sorts pods in place, the first to evict first (the kubelet's
// rankFunc).
type rankFunc func(pods []*v1.Pod, stats statsFunc)

// cmpFunc compares two pods for eviction: negative when p1 goes first.
type cmpFunc func(p1, p2 *v1.Pod) int

// orderedBy sorts by each comparison in turn (the kubelet's orderedBy). The
// sort is stable so pods that compare equal keep the caller's order.
func orderedBy(cmps ...cmpFunc) rankFunc {
	return func(pods []*v1.Pod, _ statsFunc) {
		slices.SortStableFunc(pods, func(a, b *v1.Pod) int {
			for _, c := range cmps {
				if r := c(a, b); r != 0 {
					return r
				}
			}
			return 0
		})
	}
}

// cmpBool puts true before false (the kubelet's cmpBool).
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

// priority puts the lower priority first (the kubelet's priority; its sort
// is ascending).
func priority(p1, p2 *v1.Pod) int {
	return cmp.Compare(corev1helpers.PodPriority(p1), corev1helpers.PodPriority(p2))
}

// podRequest is the pod's request of a resource, as the kubelet's
// v1resource.GetResourceRequestQuantity: the effective container requests
// (init containers and sidecars included), pod-level requests where set,
// plus the pod overhead.
func podRequest(pod *v1.Pod, name v1.ResourceName) resource.Quantity {
	q := resource.Quantity{Format: resource.BinarySI}
	if r, ok := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[name]; ok {
		q.Add(r)
	}
	return q
}

func bytesQuantity(n uint64) resource.Quantity {
	return *resource.NewQuantity(int64(n), resource.BinarySI)
}

// withStats wraps a comparison that needs both pods' stats: a pod without
// stats goes first, as in every kubelet comparison.
func withStats(stats statsFunc, f func(p1 *v1.Pod, s1 PodStats, p2 *v1.Pod, s2 PodStats) int) cmpFunc {
	return func(p1, p2 *v1.Pod) int {
		s1, ok1 := stats(p1)
		s2, ok2 := stats(p2)
		if !ok1 || !ok2 {
			return cmpBool(!ok1, !ok2)
		}
		return f(p1, s1, p2, s2)
	}
}

// exceedMemoryRequests puts pods using more memory than they request first
// (the kubelet's exceedMemoryRequests). A BestEffort pod requests nothing, so
// any usage exceeds it.
func exceedMemoryRequests(stats statsFunc) cmpFunc {
	return withStats(stats, func(p1 *v1.Pod, s1 PodStats, p2 *v1.Pod, s2 PodStats) int {
		u1, u2 := bytesQuantity(s1.MemoryWorkingSetBytes), bytesQuantity(s2.MemoryWorkingSetBytes)
		return cmpBool(u1.Cmp(podRequest(p1, v1.ResourceMemory)) > 0, u2.Cmp(podRequest(p2, v1.ResourceMemory)) > 0)
	})
}

// memory puts the largest consumer of memory above its request first (the
// kubelet's memory).
func memory(stats statsFunc) cmpFunc {
	return withStats(stats, func(p1 *v1.Pod, s1 PodStats, p2 *v1.Pod, s2 PodStats) int {
		u1, u2 := bytesQuantity(s1.MemoryWorkingSetBytes), bytesQuantity(s2.MemoryWorkingSetBytes)
		u1.Sub(podRequest(p1, v1.ResourceMemory))
		u2.Sub(podRequest(p2, v1.ResourceMemory))
		return u2.Cmp(u1)
	})
}

// process puts the pod with more processes first (the kubelet's process).
func process(stats statsFunc) cmpFunc {
	return withStats(stats, func(_ *v1.Pod, s1 PodStats, _ *v1.Pod, s2 PodStats) int {
		return cmp.Compare(s2.ProcessCount, s1.ProcessCount)
	})
}

// fsStatsType selects which usage counts against a filesystem (the kubelet's
// fsStatsType).
type fsStatsType int

const (
	fsStatsRoot fsStatsType = iota
	fsStatsLogs
	fsStatsLocalVolumeSource
)

// podDiskUsage sums the selected usage of a pod (the kubelet's podDiskUsage)
// as ephemeral-storage bytes and inodes.
func podDiskUsage(s PodStats, measure []fsStatsType) v1.ResourceList {
	var bytes, inodes uint64
	for _, c := range s.Containers {
		if slices.Contains(measure, fsStatsRoot) {
			bytes += c.Rootfs.UsedBytes
			inodes += c.Rootfs.InodesUsed
		}
		if slices.Contains(measure, fsStatsLogs) {
			bytes += c.Logs.UsedBytes
			inodes += c.Logs.InodesUsed
		}
	}
	if slices.Contains(measure, fsStatsLocalVolumeSource) {
		bytes += s.LocalVolumes.UsedBytes
		inodes += s.LocalVolumes.InodesUsed
	}
	return v1.ResourceList{
		v1.ResourceEphemeralStorage: bytesQuantity(bytes),
		resourceInodes:              *resource.NewQuantity(int64(inodes), resource.DecimalSI),
	}
}

// exceedDiskRequests puts pods using more disk than they request first (the
// kubelet's exceedDiskRequests). Inodes are never requested, so every pod
// using any exceeds its request.
func exceedDiskRequests(stats statsFunc, measure []fsStatsType, res v1.ResourceName) cmpFunc {
	return withStats(stats, func(p1 *v1.Pod, s1 PodStats, p2 *v1.Pod, s2 PodStats) int {
		d1, d2 := podDiskUsage(s1, measure)[res], podDiskUsage(s2, measure)[res]
		return cmpBool(d1.Cmp(podRequest(p1, res)) > 0, d2.Cmp(podRequest(p2, res)) > 0)
	})
}

// disk puts the largest consumer of disk above its ephemeral-storage request
// first (the kubelet's disk, which subtracts the ephemeral-storage request
// from inode usage too).
func disk(stats statsFunc, measure []fsStatsType, res v1.ResourceName) cmpFunc {
	return withStats(stats, func(p1 *v1.Pod, s1 PodStats, p2 *v1.Pod, s2 PodStats) int {
		d1, d2 := podDiskUsage(s1, measure)[res], podDiskUsage(s2, measure)[res]
		d1.Sub(podRequest(p1, v1.ResourceEphemeralStorage))
		d2.Sub(podRequest(p2, v1.ResourceEphemeralStorage))
		return d2.Cmp(d1)
	})
}

// rankMemoryPressure is the kubelet's rankMemoryPressure: pods over their
// memory request first, then lower priority, then more memory above request.
func rankMemoryPressure(pods []*v1.Pod, stats statsFunc) {
	orderedBy(exceedMemoryRequests(stats), priority, memory(stats))(pods, stats)
}

// rankPIDPressure is the kubelet's rankPIDPressure: lower priority first,
// then more processes.
func rankPIDPressure(pods []*v1.Pod, stats statsFunc) {
	orderedBy(priority, process(stats))(pods, stats)
}

// rankDiskPressureFunc is the kubelet's rankDiskPressureFunc: over request,
// priority, usage above request, for the selected usage.
func rankDiskPressureFunc(measure []fsStatsType, res v1.ResourceName) rankFunc {
	return func(pods []*v1.Pod, stats statsFunc) {
		orderedBy(exceedDiskRequests(stats, measure, res), priority, disk(stats, measure, res))(pods, stats)
	}
}

// buildSignalToRankFunc is the kubelet's buildSignalToRankFunc without a
// separate container filesystem. With a dedicated imagefs, nodefs pressure
// is relieved by logs and local volumes and imagefs pressure by writable
// layers; on one filesystem all usage counts for both.
func buildSignalToRankFunc(dedicatedImageFs bool) map[Signal]rankFunc {
	ranks := map[Signal]rankFunc{
		SignalMemoryAvailable: rankMemoryPressure,
		SignalPIDAvailable:    rankPIDPressure,
	}
	nodeFs := []fsStatsType{fsStatsRoot, fsStatsLogs, fsStatsLocalVolumeSource}
	imageFs := nodeFs
	if dedicatedImageFs {
		nodeFs = []fsStatsType{fsStatsLogs, fsStatsLocalVolumeSource}
		imageFs = []fsStatsType{fsStatsRoot}
	}
	ranks[SignalNodeFsAvailable] = rankDiskPressureFunc(nodeFs, v1.ResourceEphemeralStorage)
	ranks[SignalNodeFsInodesFree] = rankDiskPressureFunc(nodeFs, resourceInodes)
	ranks[SignalImageFsAvailable] = rankDiskPressureFunc(imageFs, v1.ResourceEphemeralStorage)
	ranks[SignalImageFsInodesFree] = rankDiskPressureFunc(imageFs, resourceInodes)
	return ranks
}
