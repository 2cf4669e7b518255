package fake

import (
	"context"

	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StopPodSandbox force-stops the sandbox's running containers (SIGKILL, exit
// code 137, as containerd's stopPodSandbox calls stopContainer with timeout
// 0), releases its IP and sets it NOTREADY. It is idempotent: stopping a
// stopped or unknown sandbox succeeds, as containerd's StopPodSandbox.
func (r *Runtime) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	if err := r.inject(ctx, "StopPodSandbox"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, err := r.st.sandbox(req.GetPodSandboxId())
	if err != nil {
		return &runtimeapi.StopPodSandboxResponse{}, nil
	}
	r.stopSandboxLocked(ctx, sb)
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// stopSandboxLocked kills the sandbox's containers and makes it NOTREADY.
func (r *Runtime) stopSandboxLocked(ctx context.Context, sb *sandbox) {
	for _, c := range sb.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING || c.state == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
			r.exitLocked(c, exitSIGKILL, "", "")
		}
	}
	if sb.ip != "" {
		// containerd reports no IP once the network namespace is closed.
		r.st.ips.release(sb.ip)
		sb.ip = ""
	}
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		// As containerd's handleSandboxExit: STOPPED with the sandbox ID.
		r.emitLocked(sb.id, sb, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
		r.log(ctx).Debug("sandbox stopped", zap.String("id", sb.id))
	}
}
