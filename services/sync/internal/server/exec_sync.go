package server

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// ExecSync runs a command in a container through CRI ExecSync.
func (s *Server) ExecSync(ctx context.Context, req *connect.Request[podv1.ExecSyncRequest]) (*connect.Response[podv1.ExecSyncResponse], error) {
	id, err := s.execTarget(req.Msg.GetNamespace(), req.Msg.GetName(), req.Msg.GetContainer(), req.Msg.GetCommand())
	if err != nil {
		return nil, toConnectError(err)
	}
	resp, err := s.runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{
		ContainerId: id, Cmd: req.Msg.GetCommand(), Timeout: req.Msg.GetTimeoutSeconds(),
	})
	if err != nil {
		return nil, toConnectError(fmt.Errorf("exec in container %s: %w", id, err))
	}
	return connect.NewResponse(&podv1.ExecSyncResponse{
		Stdout: resp.GetStdout(), Stderr: resp.GetStderr(), ExitCode: resp.GetExitCode(),
	}), nil
}

func (s *Server) resolveContainer(namespace, podName, name string, previous bool) (string, error) {
	pod, err := s.getPod(namespace, podName)
	if err != nil {
		return "", err
	}
	name, err = containerName(pod, name)
	if err != nil {
		return "", err
	}
	return containerID(pod, name, previous)
}

// execTarget checks an exec request's command and resolves the running
// container it targets; shared by Exec and ExecSync.
func (s *Server) execTarget(namespace, name, container string, command []string) (string, error) {
	if len(command) == 0 {
		return "", fmt.Errorf("command: Required value: %w", errdefs.ErrInvalidArgument)
	}
	return s.resolveContainer(namespace, name, container, false)
}
