package server

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// Exec prepares an interactive exec through CRI Exec and returns the
// runtime's streaming URL.
func (s *Server) Exec(ctx context.Context, req *connect.Request[podv1.ExecRequest]) (*connect.Response[podv1.ExecResponse], error) {
	id, err := s.execTarget(req.Msg.GetNamespace(), req.Msg.GetName(), req.Msg.GetContainer(), req.Msg.GetCommand())
	if err != nil {
		return nil, toConnectError(err)
	}
	resp, err := s.runtime.Exec(ctx, &runtimeapi.ExecRequest{
		ContainerId: id, Cmd: req.Msg.GetCommand(), Tty: req.Msg.GetTty(),
		Stdin: req.Msg.GetStdin(), Stdout: true, Stderr: !req.Msg.GetTty(),
	})
	if err != nil {
		return nil, toConnectError(fmt.Errorf("exec in container %s: %w", id, err))
	}
	return connect.NewResponse(&podv1.ExecResponse{Url: resp.GetUrl()}), nil
}
