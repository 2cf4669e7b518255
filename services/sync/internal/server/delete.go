package server

import (
	"context"

	"connectrpc.com/connect"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// Delete starts a graceful deletion of an API pod.
func (s *Server) Delete(ctx context.Context, req *connect.Request[podv1.DeleteRequest]) (*connect.Response[podv1.DeleteResponse], error) {
	ns := req.Msg.GetNamespace()
	if ns == "" {
		ns = "default"
	}
	pod, err := s.source.Delete(ctx, ns, req.Msg.GetName(), req.Msg.GracePeriodSeconds)
	if err != nil {
		return nil, toConnectError(err)
	}
	st, err := podToStruct(pod)
	if err != nil {
		return nil, toConnectError(err)
	}
	return connect.NewResponse(&podv1.DeleteResponse{Pod: st}), nil
}
