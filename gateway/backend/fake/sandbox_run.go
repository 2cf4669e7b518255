package fake

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeHandlers are the handlers the fake accepts, "" being the default.
var runtimeHandlers = []string{"", "runc", "fake"}

// RunPodSandbox creates a READY sandbox with a new 64-hex ID. As containerd's
// RunPodSandbox, the metadata name, namespace, uid and attempt are reserved
// until the sandbox is removed; a second sandbox with the same metadata
// fails. A pod-network sandbox gets an IP from 10.88.0.0/16; a host-network
// one (NamespaceOptions.Network == NODE) gets none.
func (r *Runtime) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (_ *runtimeapi.RunPodSandboxResponse, retErr error) {
	if err := r.inject(ctx, "RunPodSandbox"); err != nil {
		return nil, err
	}
	cfg := req.GetConfig()
	if cfg.GetMetadata() == nil {
		return nil, fmt.Errorf("sandbox config must include metadata: %w", errdefs.ErrInvalidArgument)
	}
	known := false
	for _, h := range runtimeHandlers {
		known = known || h == req.GetRuntimeHandler()
	}
	if !known {
		return nil, fmt.Errorf("failed to get sandbox runtime: no runtime for %q is configured: %w", req.GetRuntimeHandler(), errdefs.ErrNotFound)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	id := newID()
	name := makeSandboxName(cfg.GetMetadata())
	if err := reserve(r.st.sandboxNames, name, id); err != nil {
		return nil, fmt.Errorf("failed to reserve sandbox name %q: %w", name, err)
	}
	defer func() {
		if retErr != nil {
			delete(r.st.sandboxNames, name)
		}
	}()
	sb := &sandbox{
		id:         id,
		name:       name,
		config:     proto.CloneOf(cfg),
		handler:    req.GetRuntimeHandler(),
		state:      runtimeapi.PodSandboxState_SANDBOX_READY,
		createdAt:  r.now(),
		hostNet:    cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE,
		containers: make(map[string]*container),
	}
	if !sb.hostNet {
		ip, err := r.st.ips.allocate()
		if err != nil {
			return nil, fmt.Errorf("failed to setup network for sandbox %q: %w", id, err)
		}
		sb.ip = ip
	}
	r.st.addSandbox(sb)
	// containerd sends CREATED then STARTED with the sandbox ID as the
	// container ID (sandbox_run.go).
	r.emitLocked(id, sb, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	r.emitLocked(id, sb, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	r.log(ctx).Debug("sandbox ready", zap.String("id", id), zap.String("name", name), zap.String("ip", sb.ip))
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}
