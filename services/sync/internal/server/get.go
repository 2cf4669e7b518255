package server

import (
	"context"

	"connectrpc.com/connect"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// Get returns one pod, of any source, with its status.
func (s *Server) Get(ctx context.Context, req *connect.Request[podv1.GetRequest]) (*connect.Response[podv1.GetResponse], error) {
	pod, err := s.getPod(req.Msg.GetNamespace(), req.Msg.GetName())
	if err != nil {
		return nil, toConnectError(err)
	}
	st, err := podToStruct(pod)
	if err != nil {
		return nil, toConnectError(err)
	}
	return connect.NewResponse(&podv1.GetResponse{Pod: st}), nil
}
