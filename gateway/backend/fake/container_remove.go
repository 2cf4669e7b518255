package fake

import (
	"context"
	"fmt"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RemoveContainer removes a container and releases its name. Like
// containerd's RemoveContainer, a RUNNING (or UNKNOWN) container is first
// force-stopped (SIGKILL, exit code 137, a CONTAINER_STOPPED event) and then
// removed; no error is returned for it. Unknown IDs succeed (idempotent).
// A container that is being started cannot be removed.
func (r *Runtime) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	if err := r.inject(ctx, "RemoveContainer"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.st.container(req.GetContainerId())
	if err != nil {
		return &runtimeapi.RemoveContainerResponse{}, nil
	}
	if err := r.removeContainerLocked(c); err != nil {
		return nil, fmt.Errorf("failed to set removing state for container %q: %w", c.id, err)
	}
	r.log(ctx).Debug("container removed", zap.String("id", c.id))
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// removeContainerLocked kills the container if needed and drops it.
func (r *Runtime) removeContainerLocked(c *container) error {
	if c.starting {
		return fmt.Errorf("container is in starting state, can't be removed: %w", errdefs.ErrFailedPrecondition)
	}
	r.exitLocked(c, exitSIGKILL, "", "") // no-op unless running
	c.stopTimer()
	c.removing = true
	r.st.deleteContainer(c)
	if r.st.containerNames[c.name] == c.id {
		delete(r.st.containerNames, c.name)
	}
	r.emitLocked(c.id, c.sb, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT)
	return nil
}
