package server

import (
	"context"

	"connectrpc.com/connect"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

// Apply creates or updates the pods of a manifest, all or nothing.
func (s *Server) Apply(ctx context.Context, req *connect.Request[podv1.ApplyRequest]) (*connect.Response[podv1.ApplyResponse], error) {
	applied, err := s.source.Apply(ctx, []byte(req.Msg.GetManifest()), req.Msg.GetDryRun())
	if err != nil {
		return nil, toConnectError(err)
	}
	resp := &podv1.ApplyResponse{}
	for _, a := range applied {
		action := podv1.ApplyAction_APPLY_ACTION_UNSPECIFIED
		switch a.Action {
		case source.Created:
			action = podv1.ApplyAction_APPLY_ACTION_CREATED
		case source.Configured:
			action = podv1.ApplyAction_APPLY_ACTION_CONFIGURED
		case source.Unchanged:
			action = podv1.ApplyAction_APPLY_ACTION_UNCHANGED
		}
		resp.Pods = append(resp.Pods, &podv1.AppliedPod{
			Namespace: a.Pod.Namespace, Name: a.Pod.Name, Uid: string(a.Pod.UID), Action: action,
		})
	}
	return connect.NewResponse(resp), nil
}
