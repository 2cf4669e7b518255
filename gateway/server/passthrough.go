package server

import (
	"context"
	"slices"

	"google.golang.org/grpc"

	"github.com/splitlet/splitlet/gateway/backend"
	"github.com/splitlet/splitlet/gateway/backend/passthrough"
)

// decodedMethods are the unary CRI methods the gateway decodes even when its
// backend forwards bytes (backend.Forwarder), because some step reads their
// request or rewrites their reply:
//   - the policy reads RunPodSandbox, CreateContainer and CheckpointContainer
//     (policy.Check);
//   - the default deadline reads the timeout of StopContainer, ExecSync and
//     PullImage, and doubles RunPodSandbox's (criclient.CallTimeout);
//   - the streaming proxy rewrites the URL Exec, Attach and PortForward
//     answer (frontedRuntime).
//
// Every other unary call (status, lists, start, stop and remove of sandboxes,
// container and image status, stats, Version, ...) is forwarded as the bytes
// its client sent, and its reply as the bytes the runtime sent: the checks
// that still apply to it (validation, see method.validate) read the encoding.
var decodedMethods = map[string]bool{
	"RunPodSandbox":       true,
	"CreateContainer":     true,
	"CheckpointContainer": true,
	"StopContainer":       true,
	"ExecSync":            true,
	"PullImage":           true,
	"Exec":                true,
	"Attach":              true,
	"PortForward":         true,
}

// forwardingDesc is desc with the handler of every unary method not in
// decodedMethods replaced by one that hands the request's bytes to fwd. The
// interceptor chain runs as for any call; the streams are desc's.
func forwardingDesc(desc *grpc.ServiceDesc, fwd backend.Forwarder) *grpc.ServiceDesc {
	d := *desc
	d.Methods = slices.Clone(desc.Methods)
	for i, m := range d.Methods {
		if !decodedMethods[m.MethodName] {
			d.Methods[i].Handler = forwardHandler(fwd, "/"+desc.ServiceName+"/"+m.MethodName)
		}
	}
	return &d
}

// forwardHandler is a grpc.MethodHandler that decodes nothing: the server's
// codec (passthrough.Codec) leaves the request as a Frame, and the backend's
// reply Frame is written as it is.
func forwardHandler(fwd backend.Forwarder, fullMethod string) grpc.MethodHandler {
	forward := func(ctx context.Context, req any) (any, error) {
		reply := new(passthrough.Frame)
		if err := fwd.Forward(ctx, fullMethod, req.(*passthrough.Frame), reply); err != nil {
			return nil, err
		}
		return reply, nil
	}
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		req := new(passthrough.Frame)
		if err := dec(req); err != nil {
			return nil, err
		}
		if interceptor == nil {
			return forward(ctx, req)
		}
		return interceptor(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: fullMethod}, forward)
	}
}
