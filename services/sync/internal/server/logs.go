package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/services/sync/internal/logs"
)

// streamWriter sends every write as one LogsResponse.
type streamWriter struct {
	stream *connect.ServerStream[podv1.LogsResponse]
}

func (w streamWriter) Write(p []byte) (int, error) {
	if err := w.stream.Send(&podv1.LogsResponse{Data: append([]byte(nil), p...)}); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Logs streams a container's CRI log file, as kubectl logs: the file is the
// one the runtime reports for the container instance (the current one, or
// with previous the last terminated one), read by logs.ReadLogs; with follow,
// new lines are sent until the container stops or the client leaves.
func (s *Server) Logs(ctx context.Context, req *connect.Request[podv1.LogsRequest], stream *connect.ServerStream[podv1.LogsResponse]) error {
	m := req.Msg
	id, err := s.resolveContainer(m.GetNamespace(), m.GetName(), m.GetContainer(), m.GetPrevious())
	if err != nil {
		return toConnectError(err)
	}
	st, err := s.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return toConnectError(fmt.Errorf("container %s: %w", id, err))
	}
	path := st.GetStatus().GetLogPath()
	if path == "" {
		return toConnectError(fmt.Errorf("container %s has no log file: %w", id, errdefs.ErrNotFound))
	}
	opts := logs.Options{
		Follow:     m.GetFollow(),
		TailLines:  m.TailLines,
		LimitBytes: m.LimitBytes,
		Timestamps: m.GetTimestamps(),
		ContainerExited: func() bool {
			st, err := s.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
			return err != nil || st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING
		},
	}
	if m.SinceSeconds != nil {
		since := time.Now().Add(-time.Duration(m.GetSinceSeconds()) * time.Second)
		opts.SinceTime = &since
	}
	if m.SinceTime != nil {
		since := m.GetSinceTime().AsTime()
		opts.SinceTime = &since
	}
	if opts.Follow {
		// Headers now: a followed log may stay silent for long.
		if err := stream.Send(nil); err != nil {
			return err
		}
	}
	w := streamWriter{stream: stream}
	err = logs.ReadLogs(ctx, path, opts, w, w)
	if err != nil && opts.Follow && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		// The client left a followed log: that is how a follow ends.
		return nil
	}
	return toConnectError(err)
}
