package fake

import (
	"context"
	"fmt"

	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RemovePodSandbox stops the sandbox if needed, removes its containers (force:
// running ones are killed first) and then the sandbox, releasing its name.
// Unknown IDs succeed, as containerd's RemovePodSandbox returns nil for a
// sandbox that does not exist.
func (r *Runtime) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	if err := r.inject(ctx, "RemovePodSandbox"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, err := r.st.sandbox(req.GetPodSandboxId())
	if err != nil {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	r.stopSandboxLocked(ctx, sb)
	for _, c := range sb.containers {
		if err := r.removeContainerLocked(c); err != nil {
			return nil, fmt.Errorf("failed to remove container %q: %w", c.id, err)
		}
	}
	// containerd sends DELETED with the sandbox ID before dropping it.
	r.emitLocked(sb.id, sb, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	r.st.deleteSandbox(sb)
	if r.st.sandboxNames[sb.name] == sb.id {
		delete(r.st.sandboxNames, sb.name)
	}
	r.log(ctx).Debug("sandbox removed", zap.String("id", sb.id))
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}
