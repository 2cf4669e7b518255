package server

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
)

// GetNode implements AdmissionServiceHandler: the node admission checks pods
// against, with the eviction manager's pressure conditions.
func (s *Service) GetNode(ctx context.Context, _ *connect.Request[admissionv1.GetNodeRequest]) (*connect.Response[admissionv1.GetNodeResponse], error) {
	node, err := s.admitter.Node(ctx)
	if err != nil {
		return nil, toConnectError(fmt.Errorf("get node: %w", err))
	}
	b, err := node.Marshal()
	if err != nil {
		return nil, toConnectError(fmt.Errorf("encode node: %v: %w", err, errdefs.ErrInternal))
	}
	return connect.NewResponse(&admissionv1.GetNodeResponse{Node: b}), nil
}
