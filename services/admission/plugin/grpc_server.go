package plugin

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
)

// grpcServer adapts an AdmissionPlugin to AdmissionPluginService inside the
// plugin process.
type grpcServer struct {
	pluginv1.UnimplementedAdmissionPluginServiceServer
	impl AdmissionPlugin
	pods decodeCache
	sets activeSets
}

var _ pluginv1.AdmissionPluginServiceServer = (*grpcServer)(nil)

func (s *grpcServer) Admit(ctx context.Context, in *pluginv1.AdmitRequest) (*pluginv1.AdmitResponse, error) {
	req, err := s.decode(in)
	if err != nil {
		if _, ok := status.FromError(err); ok {
			return nil, err
		}
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	resp, err := s.impl.Admit(ctx, req)
	if err != nil {
		return nil, toStatus(err)
	}
	if resp == nil {
		return nil, status.Error(codes.Internal, "plugin returned neither a response nor an error")
	}
	return &pluginv1.AdmitResponse{Admit: resp.Admit, Reason: resp.Reason, Message: resp.Message}, nil
}

// decode reads a request: its active pods sent whole, or kept from the
// host's previous calls and changed (active_sets.go). Errors are a status
// (ActiveSetUnknown) or a malformed request.
func (s *grpcServer) decode(in *pluginv1.AdmitRequest) (*Request, error) {
	if in.GetActiveSet() == nil {
		// A host that keeps no sets for this plugin: the whole set.
		return decodeRequest(in, s.pods.decode)
	}
	// The pod and node as always; the active pods from the kept sets.
	req, err := decodeRequest(&pluginv1.AdmitRequest{Pod: in.GetPod(), Node: in.GetNode()}, s.pods.decode)
	if err != nil {
		return nil, err
	}
	if req.ActivePods, err = s.sets.activePods(in, s.pods.decode); err != nil {
		return nil, err
	}
	return req, nil
}

// Describe answers keeps_active_sets for every plugin built on the SDK: the
// SDK keeps the sets, not the plugin.
func (s *grpcServer) Describe(ctx context.Context, _ *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	out := &pluginv1.DescribeResponse{KeepsActiveSets: true}
	d, ok := s.impl.(Describer)
	if !ok {
		return out, nil
	}
	info, err := d.Describe(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	out.Name, out.Version = info.Name, info.Version
	return out, nil
}

// toStatus keeps a status the plugin chose and maps context errors to their
// codes, so the host can tell a timeout from a plugin failure.
func toStatus(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return status.FromContextError(err).Err()
	}
	return status.Error(codes.Unknown, err.Error())
}
