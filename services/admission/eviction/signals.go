package eviction

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Signal names a measurement of the node that can trigger eviction, spelled
// as the kubelet's evictionapi.Signal.
type Signal string

// The signals splitlet observes. The kubelet also knows containerfs.*,
// allocatableMemory.available and swap.available; splitlet does not observe
// them, so thresholds on them are rejected rather than silently never met.
const (
	// SignalMemoryAvailable is memory available to the node, in bytes.
	SignalMemoryAvailable Signal = "memory.available"
	// SignalNodeFsAvailable is free space on the filesystem holding the
	// node agent's root directory (volumes, logs), in bytes.
	SignalNodeFsAvailable Signal = "nodefs.available"
	// SignalNodeFsInodesFree is free inodes on that filesystem.
	SignalNodeFsInodesFree Signal = "nodefs.inodesFree"
	// SignalImageFsAvailable is free space on the filesystem the container
	// runtime keeps images and writable layers on, in bytes.
	SignalImageFsAvailable Signal = "imagefs.available"
	// SignalImageFsInodesFree is free inodes on that filesystem.
	SignalImageFsInodesFree Signal = "imagefs.inodesFree"
	// SignalPIDAvailable is the number of process IDs still free.
	SignalPIDAvailable Signal = "pid.available"
)

// resourceInodes and resourcePids are the kubelet's internal resource names
// for what inode and pid signals reclaim; no pod requests them.
const (
	resourceInodes v1.ResourceName = "inodes"
	resourcePids   v1.ResourceName = "pids"
)

// signalToNodeCondition is the kubelet's signalToNodeCondition, restricted to
// the signals splitlet observes.
var signalToNodeCondition = map[Signal]v1.NodeConditionType{
	SignalMemoryAvailable:   v1.NodeMemoryPressure,
	SignalNodeFsAvailable:   v1.NodeDiskPressure,
	SignalNodeFsInodesFree:  v1.NodeDiskPressure,
	SignalImageFsAvailable:  v1.NodeDiskPressure,
	SignalImageFsInodesFree: v1.NodeDiskPressure,
	SignalPIDAvailable:      v1.NodePIDPressure,
}

// signalToResource is the kubelet's signalToResource: what evicting a pod
// frees for each signal. It doubles as the set of valid signals
// (validSignal).
var signalToResource = map[Signal]v1.ResourceName{
	SignalMemoryAvailable:   v1.ResourceMemory,
	SignalNodeFsAvailable:   v1.ResourceEphemeralStorage,
	SignalNodeFsInodesFree:  resourceInodes,
	SignalImageFsAvailable:  v1.ResourceEphemeralStorage,
	SignalImageFsInodesFree: resourceInodes,
	SignalPIDAvailable:      resourcePids,
}

func validSignal(s Signal) bool {
	_, ok := signalToResource[s]
	return ok
}

// SignalObservation is one measured signal, as the kubelet's
// signalObservation.
type SignalObservation struct {
	// Available is how much is left (bytes, inodes or pids).
	Available resource.Quantity
	// Capacity is the total, against which percentage thresholds are
	// resolved.
	Capacity resource.Quantity
	// Time is when the value was measured. A zero Time means "fresh every
	// time"; otherwise a value no newer than the previous cycle's does not
	// drive another eviction (thresholdsUpdatedStats), so stale stats cannot
	// evict a second pod for pressure the first eviction already relieved.
	Time time.Time
}

// FsUsage is how much of a filesystem something uses.
type FsUsage struct {
	UsedBytes  uint64
	InodesUsed uint64
}

// ContainerStats is the usage of one container of a pod. A value the
// provider could not measure is zero, which never counts as exceeding a
// request.
type ContainerStats struct {
	// Name is the container's name in the pod spec.
	Name string
	// MemoryWorkingSetBytes is the container's memory working set.
	MemoryWorkingSetBytes uint64
	// Rootfs is the container's writable layer.
	Rootfs FsUsage
	// Logs is the container's log files.
	Logs FsUsage
}

// PodStats is the usage of one pod, matched to pods by UID.
type PodStats struct {
	UID       types.UID
	Namespace string
	Name      string
	// MemoryWorkingSetBytes is the pod cgroup's memory working set.
	MemoryWorkingSetBytes uint64
	// ProcessCount is the number of processes in the pod.
	ProcessCount uint64
	// Containers holds per-container usage, which the eviction message
	// names and disk ranking sums.
	Containers []ContainerStats
	// LocalVolumes is the usage of the pod's node-local volumes (emptyDir
	// not backed by memory, hostPath and the like).
	LocalVolumes FsUsage
}

// Observations is one snapshot of the node: its signals and the usage of
// every pod the provider knows about.
type Observations struct {
	// Signals holds the observed signals. A signal that could not be
	// measured is absent; thresholds on it are skipped for the cycle.
	Signals map[Signal]SignalObservation
	// Pods is per-pod usage. A pod without stats ranks first for eviction,
	// as in the kubelet (the pod it cannot measure is the one it cannot
	// prove innocent).
	Pods []PodStats
}

// SummaryProvider produces observations for the eviction manager; it plays
// the role of the kubelet's stats.SummaryProvider.
//
// Observe is called once per eviction cycle. It returns an error only when
// the snapshot as a whole is unusable; the manager then skips the cycle and
// keeps its state. Individual signals that cannot be measured are left out
// of Signals instead. Implementations must be safe for concurrent use.
type SummaryProvider interface {
	Observe(ctx context.Context) (Observations, error)
}

// PodStatsProvider reports the usage of the pods running on the node. It will
// be implemented over CRI ListPodSandboxStats / ListContainerStats through
// the runtime gateway (pod and container memory working set, writable layer
// usage, process count).
//
// Contract:
//   - ListPodStats returns one entry per pod sandbox the runtime runs, keyed
//     by the pod's UID (the sandbox metadata's uid), with Namespace and Name
//     filled for logs; a pod may have several sandboxes over its life, and
//     only the ready one should be reported.
//   - Values the runtime does not report are zero; the provider must not
//     invent them.
//   - It returns an error (wrapping an errdefs sentinel, for example
//     errdefs.ErrUnavailable when the gateway cannot be reached) when it
//     cannot list at all; the eviction cycle is then skipped, because ranking
//     without stats would pick victims by priority alone.
//   - It must honour ctx's deadline and be safe for concurrent use.
type PodStatsProvider interface {
	ListPodStats(ctx context.Context) ([]PodStats, error)
}

// statsFunc finds a pod's stats, as the kubelet's statsFunc.
type statsFunc func(pod *v1.Pod) (PodStats, bool)

// cachedStatsFunc indexes stats by pod UID (the kubelet's cachedStatsFunc).
func cachedStatsFunc(pods []PodStats) statsFunc {
	byUID := make(map[types.UID]PodStats, len(pods))
	for _, p := range pods {
		byUID[p.UID] = p
	}
	return func(pod *v1.Pod) (PodStats, bool) {
		s, ok := byUID[pod.UID]
		return s, ok
	}
}
