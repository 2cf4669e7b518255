package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// MinimumGracePeriodInSeconds is the least time a container is given to
// stop, whatever the hook took: the kubelet's minimumGracePeriodInSeconds.
const MinimumGracePeriodInSeconds = 2

// ErrPostStartHook is returned (wrapped) by PostStart when the hook fails.
// Its text is the kubelet's ErrPostStartHook ("PostStartHookError"), which
// becomes the container's waiting reason.
var ErrPostStartHook = errors.New("PostStartHookError")

// PostStart runs the container's postStart hook, if any. On failure it
// records a FailedPostStartHook event ("PostStartHook failed": the hook's
// output stays out of events, which anyone may read) and returns the
// kubelet's message with an error wrapping ErrPostStartHook. The caller
// then kills the container with reason FailedPostStartHook and reports the
// message, as the kubelet's startContainer does.
func (hr *HandlerRunner) PostStart(ctx context.Context, id container.ContainerID, pod *v1.Pod, c *v1.Container) (string, error) {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return "", nil
	}
	msg, err := hr.Run(ctx, id, pod, c, c.Lifecycle.PostStart)
	if err == nil {
		return "", nil
	}
	logctx.From(ctx).Info("postStart hook failed", zap.String("pod", pod.Namespace+"/"+pod.Name),
		zap.String("container", c.Name), zap.String("containerID", id.String()), zap.Error(err))
	if hr.recorder != nil {
		hr.recorder.EventfContainer(pod, c.Name, v1.EventTypeWarning, ReasonFailedPostStartHook, "PostStartHook failed")
	}
	// One %w only: status.ReasonCache unwraps to the innermost error for
	// the waiting reason, which must be "PostStartHookError".
	return msg, fmt.Errorf("%w: %v", ErrPostStartHook, err)
}

// ExecutePreStopHook runs the container's preStop hook and waits for it at
// most gracePeriod seconds; it returns the whole seconds spent. A failing
// hook records a FailedPreStopHook event ("PreStopHook failed"). Matches
// the kubelet's executePreStopHook, with one difference: a hook still
// running when the grace period is over has its context cancelled rather
// than being left behind, since the container is being stopped anyway (a
// sleep hook ended so records no failure, as the kubelet's would not).
func (hr *HandlerRunner) ExecutePreStopHook(ctx context.Context, id container.ContainerID, pod *v1.Pod, c *v1.Container, gracePeriod int64) int64 {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return 0
	}
	start := time.Now()
	hookCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// cutOff is set before the hook's context is cancelled at the end of
	// the grace period. A sleep hook ended that way did not fail: the
	// kubelet, which leaves it running, sees it finish without error.
	var cutOff atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := hr.Run(hookCtx, id, pod, c, c.Lifecycle.PreStop)
		if err != nil && cutOff.Load() && c.Lifecycle.PreStop.Sleep != nil {
			return
		}
		if err != nil {
			logctx.From(ctx).Info("preStop hook failed", zap.String("pod", pod.Namespace+"/"+pod.Name),
				zap.String("container", c.Name), zap.String("containerID", id.String()), zap.Error(err))
			if hr.recorder != nil {
				hr.recorder.EventfContainer(pod, c.Name, v1.EventTypeWarning, ReasonFailedPreStopHook, "PreStopHook failed")
			}
		}
	}()
	timer := time.NewTimer(time.Duration(gracePeriod) * hr.timeUnit)
	defer timer.Stop()
	select {
	case <-timer.C:
		cutOff.Store(true)
		logctx.From(ctx).Info("preStop hook not completed in grace period", zap.String("pod", pod.Namespace+"/"+pod.Name),
			zap.String("container", c.Name), zap.Int64("gracePeriod", gracePeriod))
	case <-done:
	case <-ctx.Done():
	}
	return int64(time.Since(start) / hr.timeUnit)
}

// PreStop runs the preStop hook, if the container has one and gracePeriod
// is positive, and returns the grace period the runtime should give the
// container: what the hook left of gracePeriod, but at least
// MinimumGracePeriodInSeconds. Matches this part of the kubelet's
// killContainer.
func (hr *HandlerRunner) PreStop(ctx context.Context, id container.ContainerID, pod *v1.Pod, c *v1.Container, gracePeriod int64) int64 {
	var spent int64
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && gracePeriod > 0 {
		spent = hr.ExecutePreStopHook(ctx, id, pod, c, gracePeriod)
	}
	return RemainingGracePeriod(gracePeriod, spent)
}

// RemainingGracePeriod is gracePeriod less the seconds a preStop hook
// spent, floored at MinimumGracePeriodInSeconds.
func RemainingGracePeriod(gracePeriod, spent int64) int64 {
	if remaining := gracePeriod - spent; remaining > MinimumGracePeriodInSeconds {
		return remaining
	}
	return MinimumGracePeriodInSeconds
}

// Kill reasons TerminationGracePeriod looks at; they equal kuberuntime's
// ReasonLivenessProbe and ReasonStartupProbe.
const (
	KillReasonLivenessProbe = "LivenessProbe"
	KillReasonStartupProbe  = "StartupProbe"
)

// TerminationGracePeriod is the grace period a kill of c starts from.
// Matches the kubelet's setTerminationGracePeriod: the pod's deletion
// grace period if it is being deleted; else, for a liveness or startup
// probe kill, the probe's own terminationGracePeriodSeconds when set; else
// the pod's terminationGracePeriodSeconds; else
// MinimumGracePeriodInSeconds.
func TerminationGracePeriod(pod *v1.Pod, c *v1.Container, reason string) int64 {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		var p *v1.Probe
		switch reason {
		case KillReasonStartupProbe:
			p = c.StartupProbe
		case KillReasonLivenessProbe:
			p = c.LivenessProbe
		}
		if p != nil && p.TerminationGracePeriodSeconds != nil {
			return *p.TerminationGracePeriodSeconds
		}
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return MinimumGracePeriodInSeconds
}
