package container

import (
	"cmp"
	"slices"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SortNewestFirst orders the pod status's sandboxes and container instances
// newest first, the order PodStatus documents. The sort is stable, so
// instances created at the same instant keep their relative order.
func (ps *PodStatus) SortNewestFirst() {
	if ps == nil {
		return
	}
	slices.SortStableFunc(ps.SandboxStatuses, func(a, b *runtimeapi.PodSandboxStatus) int {
		// CreatedAt is Unix nanoseconds in CRI; larger is newer.
		return cmp.Compare(b.GetCreatedAt(), a.GetCreatedAt())
	})
	slices.SortStableFunc(ps.ContainerStatuses, func(a, b *Status) int {
		return b.CreatedAt.Compare(a.CreatedAt)
	})
}
