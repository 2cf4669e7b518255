package plugin

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
)

// GRPCPlugin is the go-plugin glue for AdmissionPlugin. On the plugin side Impl
// is served; on the host side Impl is unused and the dispensed value is a
// *GRPCClient.
type GRPCPlugin struct {
	// Only gRPC: go-plugin's net/rpc protocol is not offered.
	goplugin.NetRPCUnsupportedPlugin

	// Impl is the implementation a plugin serves.
	Impl AdmissionPlugin
}

var _ goplugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer implements goplugin.GRPCPlugin.
func (p *GRPCPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pluginv1.RegisterAdmissionPluginServiceServer(s, &grpcServer{impl: p.Impl})
	return nil
}

// GRPCClient implements goplugin.GRPCPlugin; the value is a *GRPCClient.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return &GRPCClient{client: pluginv1.NewAdmissionPluginServiceClient(c)}, nil
}
