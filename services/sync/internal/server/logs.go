package server

import (
	"context"
	"errors"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// Logs streams a container's CRI log file, as kubectl logs: the container
// instance is the one the kubelet would pick from the pod's status
// (logs.ContainerLogID: the current one, or with previous the last
// terminated one), read by logs.ContainerLogs; with follow, new lines are
// sent until the container stops or the client leaves.
func (s *Server) Logs(ctx context.Context, req *connect.Request[podv1.LogsRequest], stream *connect.ServerStream[podv1.LogsResponse]) error {
	m := req.Msg
	pod, err := s.getPod(m.GetNamespace(), m.GetName())
	if err != nil {
		return toConnectError(err)
	}
	name, err := containerName(pod, m.GetContainer())
	if err != nil {
		return toConnectError(err)
	}
	id, err := logs.ContainerLogID(pod.Name, &pod.Status, name, m.GetPrevious())
	if err != nil {
		return toConnectError(err)
	}
	podOpts := &v1.PodLogOptions{
		Follow: m.GetFollow(), TailLines: m.TailLines, LimitBytes: m.LimitBytes,
		Timestamps: m.GetTimestamps(), SinceSeconds: m.SinceSeconds,
	}
	if m.SinceTime != nil {
		podOpts.SinceTime = &metav1.Time{Time: m.GetSinceTime().AsTime()}
	}
	opts := logs.OptionsFrom(podOpts, time.Now())
	if opts.Follow {
		// Headers now: a followed log may stay silent for long.
		if err := stream.Send(nil); err != nil {
			return err
		}
	}
	w := streamWriter{stream: stream}
	err = logs.ContainerLogs(ctx, s.runtime, id, opts, w, w)
	if err != nil && opts.Follow && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		// The client left a followed log: that is how a follow ends.
		return nil
	}
	return toConnectError(err)
}
