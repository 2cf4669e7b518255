package plugin

import (
	"context"
	"fmt"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
)

// GRPCClient is the host's view of a plugin: an AdmissionPlugin (and
// Describer) whose calls cross the gRPC connection to the plugin process.
type GRPCClient struct {
	client pluginv1.AdmissionPluginServiceClient
	enc    Encoder
}

var (
	_ AdmissionPlugin = (*GRPCClient)(nil)
	_ Describer       = (*GRPCClient)(nil)
)

// Admit implements AdmissionPlugin, encoding through an Encoder (see its
// convention on in-place mutation). Errors carry the gRPC status the plugin
// (or the transport) returned; status.FromError finds it.
func (c *GRPCClient) Admit(ctx context.Context, req *Request) (*Response, error) {
	in, err := c.enc.Encode(req)
	if err != nil {
		return nil, err
	}
	return c.AdmitEncoded(ctx, in)
}

// AdmitEncoded is Admit with a request already encoded by EncodeRequest, so a
// host calling several plugins encodes the active pods once.
func (c *GRPCClient) AdmitEncoded(ctx context.Context, in *pluginv1.AdmitRequest) (*Response, error) {
	out, err := c.client.Admit(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}
	return &Response{Admit: out.GetAdmit(), Reason: out.GetReason(), Message: out.GetMessage()}, nil
}

// Describe implements Describer.
func (c *GRPCClient) Describe(ctx context.Context) (Info, error) {
	out, err := c.client.Describe(ctx, &pluginv1.DescribeRequest{})
	if err != nil {
		return Info{}, fmt.Errorf("describe: %w", err)
	}
	return Info{Name: out.GetName(), Version: out.GetVersion()}, nil
}
