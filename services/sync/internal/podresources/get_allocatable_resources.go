package podresources

import (
	"context"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// GetAllocatableResources returns no devices, CPU IDs or memory: splitlet
// has no device manager, CPU manager or memory manager to allocate them
// (the kubelet's GetAllocatableResources, whose providers are those
// managers, answers the same with no device plugins and the none
// policies).
func (s *Server) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	s.metrics.countGetAllocatable()
	return &podresourcesv1.AllocatableResourcesResponse{}, nil
}
