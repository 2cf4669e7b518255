package podresources

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// Get returns one active pod with its containers (the kubelet's Get,
// KubeletPodResourcesGet). A pod that is unknown or terminated is "pod
// <name> in namespace <namespace> not found" with code Unknown: the
// kubelet returns a plain error, which gRPC sends so.
func (s *Server) Get(_ context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	s.metrics.countGet()
	pod, ok := s.pods.GetActivePodByName(req.GetPodNamespace(), req.GetPodName())
	if !ok {
		s.metrics.countGetError()
		return nil, status.Error(codes.Unknown, fmt.Sprintf("pod %s in namespace %s not found", req.GetPodName(), req.GetPodNamespace()))
	}
	return &podresourcesv1.GetPodResourcesResponse{PodResources: podResources(pod)}, nil
}
