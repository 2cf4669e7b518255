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
}

var _ pluginv1.AdmissionPluginServiceServer = (*grpcServer)(nil)

func (s *grpcServer) Admit(ctx context.Context, in *pluginv1.AdmitRequest) (*pluginv1.AdmitResponse, error) {
	req, err := decodeRequest(in, s.pods.decode)
	if err != nil {
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

func (s *grpcServer) Describe(ctx context.Context, _ *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	d, ok := s.impl.(Describer)
	if !ok {
		return &pluginv1.DescribeResponse{}, nil
	}
	info, err := d.Describe(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pluginv1.DescribeResponse{Name: info.Name, Version: info.Version}, nil
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
