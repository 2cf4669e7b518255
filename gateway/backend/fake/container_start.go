package fake

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Exit codes and reasons, as containerd and runc report them.
const (
	exitSIGKILL = 137 // 128 + SIGKILL
	exitSIGTERM = 143 // 128 + SIGTERM
	// errorStartExitCode and errorStartReason are containerd's for a
	// container whose task failed to start.
	errorStartExitCode = 128
	errorStartReason   = "StartError"
	reasonOOMKilled    = "OOMKilled"
	reasonCompleted    = "Completed"
	reasonError        = "Error"
)

// StartContainer starts a CREATED container: it becomes RUNNING, its
// scripted stdout lines are written to its CRI log file, and its script
// takes over (exit after a while, crash at once, ...). As containerd's
// setContainerStarting, only a CREATED container can start ("container is
// in CONTAINER_RUNNING state" otherwise). A `start-fail` script, or a log
// file that cannot be written, leaves the container EXITED with exit code
// 128 and reason StartError, as containerd's StartContainer does when the
// task fails to start.
func (r *Runtime) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	if err := r.inject(ctx, "StartContainer"); err != nil {
		return nil, err
	}

	// Phase 1: claim the container, as containerd's "starting" flag does, so
	// the log file is written without holding the state lock.
	r.mu.Lock()
	c, err := r.st.container(req.GetContainerId())
	if err != nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("an error occurred when try to find container %q: %w", req.GetContainerId(), err)
	}
	if err := setStarting(c); err != nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("failed to set starting state for container %q: %w", c.id, err)
	}
	if c.sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		c.starting = false
		r.mu.Unlock()
		return nil, fmt.Errorf("sandbox container %q is not running: %w", c.sb.id, errdefs.ErrFailedPrecondition)
	}
	beh, logPath := c.beh, c.logPath
	r.mu.Unlock()

	// Phase 2: the "process" starts and prints.
	var startErr error
	switch {
	case beh.startFail:
		startErr = fmt.Errorf("failed to start containerd task %q: OCI runtime start failed: fake: scripted start-fail: %w", c.id, errdefs.ErrUnknown)
	case logPath != "":
		if err := writeLogLines(logPath, r.clock(), beh.stdout); err != nil {
			startErr = fmt.Errorf("failed to create container loggers: %w", err)
		}
	}

	// Phase 3: record the outcome.
	r.mu.Lock()
	defer r.mu.Unlock()
	c.starting = false
	if startErr == nil && c.sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		// The sandbox was stopped while the container was starting.
		startErr = fmt.Errorf("sandbox container %q is not running: %w", c.sb.id, errdefs.ErrFailedPrecondition)
	}
	if startErr != nil {
		c.state = runtimeapi.ContainerState_CONTAINER_EXITED
		c.finishedAt = r.now()
		c.exitCode = errorStartExitCode
		c.reason = errorStartReason
		c.message = startErr.Error()
		close(c.exited)
		r.emitLocked(c.id, c.sb, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
		return nil, startErr
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = r.now()
	r.emitLocked(c.id, c.sb, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	switch {
	case beh.exitsAtStart():
		code, reason := beh.exitOnOwn()
		r.exitLocked(c, code, reason, "")
	case beh.after > 0:
		r.armTimerLocked(c, beh.after)
	}
	r.log(ctx).Debug("container started", zap.String("id", c.id))
	return &runtimeapi.StartContainerResponse{}, nil
}

// setStarting mirrors containerd's setContainerStarting.
func setStarting(c *container) error {
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return fmt.Errorf("container is in %s state: %w", c.state, errdefs.ErrFailedPrecondition)
	}
	if c.removing {
		return fmt.Errorf("container is in removing state, can't be started: %w", errdefs.ErrFailedPrecondition)
	}
	if c.starting {
		return fmt.Errorf("container is already in starting state: %w", errdefs.ErrFailedPrecondition)
	}
	c.starting = true
	return nil
}

// armTimerLocked ends the container after d with its scripted exit. There is
// one timer per container; stopping or removing the container cancels it.
func (r *Runtime) armTimerLocked(c *container, d time.Duration) {
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		// A stop or remove that won the race has already cleared c.timer.
		if c.timer != t {
			return
		}
		c.timer = nil
		code, reason := c.beh.exitOnOwn()
		r.exitLocked(c, code, reason, "")
	})
	c.timer = t
}

// exitLocked moves a RUNNING (or UNKNOWN) container to EXITED, as
// containerd's handleContainerExit does, and sends CONTAINER_STOPPED.
// Reason "" is filled in by the status: Completed for 0, Error otherwise.
func (r *Runtime) exitLocked(c *container, code int32, reason, message string) {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING && c.state != runtimeapi.ContainerState_CONTAINER_UNKNOWN {
		return
	}
	c.stopTimer()
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finishedAt = r.now()
	c.exitCode = code
	c.reason = reason
	c.message = message
	close(c.exited)
	r.emitLocked(c.id, c.sb, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT)
}
