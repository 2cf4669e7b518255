package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Exec, attach and port forwarding. ExecSync runs in the runtime and returns its output; Exec, Attach and
// PortForward return the runtime's streaming URL unchanged, so the client
// streams with the runtime directly, as the kubelet's clients do.

func (r *Runtime) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	return r.runtime.ExecSync(ctx, req)
}

func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return r.runtime.Exec(ctx, req)
}

func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return r.runtime.Attach(ctx, req)
}

func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return r.runtime.PortForward(ctx, req)
}
