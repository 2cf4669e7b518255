package podresources

import (
	"context"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// List returns every active pod with its containers (the kubelet's List
// with KubeletPodResourcesListUseActivePods): a terminated pod is left
// out.
func (s *Server) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	s.metrics.countList()
	pods := s.pods.GetActivePods()
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: make([]*podresourcesv1.PodResources, 0, len(pods))}
	for _, pod := range pods {
		resp.PodResources = append(resp.PodResources, podResources(pod))
	}
	return resp, nil
}
