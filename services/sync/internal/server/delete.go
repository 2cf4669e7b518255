package server

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/services/sync/internal/apiserver"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

// Delete starts a graceful deletion of an API pod.
func (s *Server) Delete(ctx context.Context, req *connect.Request[podv1.DeleteRequest]) (*connect.Response[podv1.DeleteResponse], error) {
	ns := req.Msg.GetNamespace()
	if ns == "" {
		ns = "default"
	}
	pod, err := s.source.Delete(ctx, ns, req.Msg.GetName(), req.Msg.GracePeriodSeconds)
	if errdefs.IsNotFound(err) {
		err = notDeletableHere(s, ns, req.Msg.GetName(), err)
	}
	if err != nil {
		return nil, toConnectError(err)
	}
	st, err := podToStruct(pod)
	if err != nil {
		return nil, toConnectError(err)
	}
	return connect.NewResponse(&podv1.DeleteResponse{Pod: st}), nil
}

// notDeletableHere turns the PodService's NotFound for a pod another source
// runs into FailedPrecondition saying where the pod must be deleted: a static
// pod by removing its manifest (the kubelet recreates a static pod's mirror
// when it is deleted through the API server), an API server pod through the
// API server. A pod no source has keeps notFound.
func notDeletableHere(s *Server, namespace, name string, notFound error) error {
	pod := s.pods.GetPodByFullName(namespace, name)
	if pod == nil {
		return notFound
	}
	src := pod.Annotations[defaults.ConfigSourceAnnotationKey]
	how := fmt.Sprintf("delete it where the %q source has it", src)
	switch src {
	case source.FileSourceName:
		how = "it is a static pod: remove its manifest from --manifest-dir"
	case source.HTTPSourceName:
		how = "it is a static pod: remove it from what --manifest-url serves"
	case apiserver.SourceName:
		how = "delete it through the Kubernetes API server"
	}
	return fmt.Errorf("pod %s/%s was not applied through the PodService; %s: %w", namespace, name, how, errdefs.ErrFailedPrecondition)
}
