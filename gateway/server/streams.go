package server

import (
	"context"
	"fmt"
	"net"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend"
	"github.com/splitlet/splitlet/gateway/streamproxy"
)

// frontedRuntime is the backend with its streaming URLs swapped for the
// gateway's (Config.StreamingAddr): Exec, Attach and PortForward return a
// URL of the gateway's streaming proxy, which forwards to the runtime's.
type frontedRuntime struct {
	backend.Runtime
	proxy *streamproxy.Proxy
}

func (f frontedRuntime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	resp, err := f.Runtime.Exec(ctx, req)
	if err != nil {
		return nil, err
	}
	u, err := f.proxy.Front(streamproxy.Exec, resp.GetUrl())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ExecResponse{Url: u}, nil
}

func (f frontedRuntime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	resp, err := f.Runtime.Attach(ctx, req)
	if err != nil {
		return nil, err
	}
	u, err := f.proxy.Front(streamproxy.Attach, resp.GetUrl())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.AttachResponse{Url: u}, nil
}

func (f frontedRuntime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	resp, err := f.Runtime.PortForward(ctx, req)
	if err != nil {
		return nil, err
	}
	u, err := f.proxy.Front(streamproxy.PortForward, resp.GetUrl())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PortForwardResponse{Url: u}, nil
}

// newStreamProxy opens Config.StreamingAddr and builds the proxy on it; its
// streams end with the server's stream context.
func (s *Server) newStreamProxy() (*streamproxy.Proxy, error) {
	ln, err := net.Listen("tcp", s.cfg.StreamingAddr)
	if err != nil {
		return nil, fmt.Errorf("listen for streams on %s: %w", s.cfg.StreamingAddr, err)
	}
	p, err := streamproxy.New(streamproxy.Options{
		Listener:    ln,
		BaseURL:     s.cfg.StreamingBaseURL,
		BaseContext: s.streamCtx,
		Registerer:  s.metrics.registry,
		Logger:      s.log,
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	s.streamLn = ln
	return p, nil
}
