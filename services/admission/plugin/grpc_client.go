package plugin

import (
	"context"
	"fmt"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
)

// GRPCClient is the host's view of a plugin: an AdmissionPlugin (and
// Describer) whose calls cross the gRPC connection to the plugin process.
//
// A GRPCClient talks to one plugin process. Once Describe has found that the
// plugin keeps active sets (every plugin built on this SDK does), it sends
// the whole active set once and then only what changed since the set the
// plugin last acknowledged (active_delta.go); before, or for plugins that do
// not, it sends the whole set on every call.
type GRPCClient struct {
	client pluginv1.AdmissionPluginServiceClient
	enc    Encoder
	sets   activeSender
}

var (
	_ AdmissionPlugin = (*GRPCClient)(nil)
	_ Describer       = (*GRPCClient)(nil)
)

// Admit implements AdmissionPlugin, encoding through an Encoder (see its
// convention on in-place mutation). Errors carry the gRPC status the plugin
// (or the transport) returned; status.FromError finds it.
func (c *GRPCClient) Admit(ctx context.Context, req *Request) (*Response, error) {
	p, err := c.enc.Prepare(req)
	if err != nil {
		return nil, err
	}
	return c.AdmitPrepared(ctx, p)
}

// AdmitPrepared is Admit with a request already encoded by Encoder.Prepare,
// so a host calling several plugins encodes the active pods once. It sends
// the plugin the whole active set or only its changes (see GRPCClient), and
// the whole set again when the plugin answers that it does not hold the
// base of the changes.
func (c *GRPCClient) AdmitPrepared(ctx context.Context, p *Prepared) (*Response, error) {
	in, sent := c.sets.request(p, false)
	out, err := c.client.Admit(ctx, in)
	if err != nil && in.GetActiveSet().GetBaseGeneration() != 0 && isActiveSetUnknown(err) {
		c.sets.forget(in.GetActiveSet().GetBaseGeneration())
		in, sent = c.sets.request(p, true)
		out, err = c.client.Admit(ctx, in)
	}
	if err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}
	c.sets.acknowledge(sent)
	return &Response{Admit: out.GetAdmit(), Reason: out.GetReason(), Message: out.GetMessage()}, nil
}

// AdmitEncoded is Admit with a request already encoded by EncodeRequest; it
// is sent as it is.
//
// Deprecated: use AdmitPrepared, which sends a plugin that keeps active
// sets only the changes.
func (c *GRPCClient) AdmitEncoded(ctx context.Context, in *pluginv1.AdmitRequest) (*Response, error) {
	out, err := c.client.Admit(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("admit: %w", err)
	}
	return &Response{Admit: out.GetAdmit(), Reason: out.GetReason(), Message: out.GetMessage()}, nil
}

// KeepsActiveSets reports whether the plugin declared, in its last
// Describe, that it keeps active sets, so that calls send only changes.
func (c *GRPCClient) KeepsActiveSets() bool { return c.sets.keepsSets() }

// Describe implements Describer. It also learns whether the plugin keeps
// active sets; a host calls it once after starting the plugin.
func (c *GRPCClient) Describe(ctx context.Context) (Info, error) {
	out, err := c.client.Describe(ctx, &pluginv1.DescribeRequest{})
	if err != nil {
		return Info{}, fmt.Errorf("describe: %w", err)
	}
	c.sets.setKeeps(out.GetKeepsActiveSets())
	return Info{Name: out.GetName(), Version: out.GetVersion()}, nil
}
