// Package nodeinfo builds the *v1.Node that admission checks pods against:
// capacity detected from the machine, allocatable after the kubelet's
// reservations, the standard labels, and configured labels and taints.
//
//	node, err := nodeinfo.Build(nodeinfo.Config{RootDir: "/var/lib/splitlet"})
//	src := nodeinfo.NewStatic(node)
//	h := predicate.NewHandler(predicate.Options{GetNode: src.Node})
//
// Capacity comes from the same places the kubelet's cAdvisor reads: logical
// CPUs (lowered to a cgroup CPU quota when one is set), MemTotal from
// /proc/meminfo, pre-allocated huge pages from /sys/kernel/mm/hugepages, the
// size of the filesystem holding RootDir, and 110 pods. Allocatable is
// capacity minus system-reserved, kube-reserved and the hard eviction
// thresholds, as GetNodeAllocatableReservation computes it.
package nodeinfo
