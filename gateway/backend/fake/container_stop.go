package fake

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StopContainer stops a running container with a grace period of
// req.Timeout seconds (each lasting Options.TimeoutUnit), following
// containerd's stopContainer:
//   - a container that is not running, or does not exist, is left alone and
//     the call succeeds (StopContainer is idempotent);
//   - timeout 0 sends SIGKILL at once: exit code 137;
//   - otherwise SIGTERM: the container ends at once with exit code 143,
//     unless its script says `ignore-sigterm`, in which case the call waits
//     the whole grace period (or until the container exits on its own, or
//     the caller gives up) and then SIGKILLs it: exit code 137.
//
// The reason of a killed container is "Error" (non-zero exit code).
func (r *Runtime) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	if err := r.inject(ctx, "StopContainer"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	c, err := r.st.container(req.GetContainerId())
	if err != nil || (c.state != runtimeapi.ContainerState_CONTAINER_RUNNING && c.state != runtimeapi.ContainerState_CONTAINER_UNKNOWN) {
		r.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	}
	timeout := time.Duration(req.GetTimeout()) * r.timeoutUnit
	switch {
	case timeout <= 0:
		r.exitLocked(c, exitSIGKILL, "", "")
		r.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	case !c.beh.ignoreSigterm:
		r.exitLocked(c, exitSIGTERM, "", "")
		r.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	}
	exited := c.exited
	r.mu.Unlock()

	r.log(ctx).Debug("container ignores SIGTERM, waiting out the grace period",
		zap.String("id", c.id), zap.Duration("timeout", timeout))
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-exited:
		return &runtimeapi.StopContainerResponse{}, nil
	case <-ctx.Done():
		// As containerd: the caller's deadline ends the wait, no SIGKILL.
		return nil, fmt.Errorf("wait container %q: %w", c.id, ctx.Err())
	case <-t.C:
	}
	r.mu.Lock()
	r.exitLocked(c, exitSIGKILL, "", "")
	r.mu.Unlock()
	return &runtimeapi.StopContainerResponse{}, nil
}
