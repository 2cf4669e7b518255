package server

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// List returns the pods of every source with their status.
func (s *Server) List(ctx context.Context, req *connect.Request[podv1.ListRequest]) (*connect.Response[podv1.ListResponse], error) {
	match, err := podFilter(req.Msg.GetNamespace(), "", req.Msg.GetLabelSelector())
	if err != nil {
		return nil, toConnectError(err)
	}
	resp := &podv1.ListResponse{}
	for _, pod := range s.pods.GetPodsWithStatus() {
		if !match(pod) {
			continue
		}
		st, err := podToStruct(pod)
		if err != nil {
			return nil, toConnectError(err)
		}
		resp.Pods = append(resp.Pods, st)
	}
	return connect.NewResponse(resp), nil
}

// podFilter matches pods by namespace (empty: all), name (empty: all) and a
// Kubernetes label selector.
func podFilter(namespace, name, selector string) (func(*v1.Pod) bool, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("label selector %q: %v: %w", selector, err, errdefs.ErrInvalidArgument)
	}
	return func(p *v1.Pod) bool {
		return (namespace == "" || p.Namespace == namespace) &&
			(name == "" || p.Name == name) &&
			sel.Matches(labels.Set(p.Labels))
	}, nil
}
