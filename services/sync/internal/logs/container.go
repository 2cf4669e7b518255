package logs

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerStatuser is the one CRI call reading a container's logs needs
// (runtimeapi.RuntimeServiceClient has it).
type ContainerStatuser interface {
	ContainerStatus(ctx context.Context, in *runtimeapi.ContainerStatusRequest, opts ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error)
}

// ContainerLogID picks the runtime container whose log `kubectl logs` means,
// from the pod's status: with previous, the last terminated instance;
// otherwise the running one, or the terminated one (or, when the next
// instance never started, the one before). Matches the kubelet's
// validateContainerLogStatus, with its messages; the errors wrap
// errdefs.ErrNotFound (no such container or instance) or
// errdefs.ErrFailedPrecondition (the container is waiting to start).
func ContainerLogID(podName string, status *v1.PodStatus, container string, previous bool) (string, error) {
	var cs *v1.ContainerStatus
	for _, list := range [][]v1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses, status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				cs = &list[i]
				break
			}
		}
		if cs != nil {
			break
		}
	}
	if cs == nil {
		return "", statusError{fmt.Sprintf("container %q in pod %q is not available", container, podName), errdefs.ErrNotFound}
	}
	last := cs.LastTerminationState.Terminated
	terminatedErr := statusError{fmt.Sprintf("container %q in pod %q is terminated", container, podName), errdefs.ErrNotFound}
	var id string
	switch st := cs.State; {
	case previous:
		if last == nil || last.ContainerID == "" {
			return "", statusError{fmt.Sprintf("previous terminated container %q in pod %q not found", container, podName), errdefs.ErrNotFound}
		}
		id = last.ContainerID
	case st.Running != nil:
		id = cs.ContainerID
	case st.Terminated != nil:
		id = st.Terminated.ContainerID
		if id == "" {
			if last == nil || last.ContainerID == "" {
				return "", terminatedErr
			}
			id = last.ContainerID
		}
	case last != nil:
		if last.ContainerID == "" {
			return "", terminatedErr
		}
		id = last.ContainerID
	case st.Waiting != nil:
		msg := st.Waiting.Reason
		switch msg {
		case "ErrImagePull":
			msg = "image can't be pulled"
		case "ImagePullBackOff":
			msg = "trying and failing to pull image"
		}
		return "", statusError{fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, podName, msg), errdefs.ErrFailedPrecondition}
	default:
		return "", statusError{fmt.Sprintf("container %q in pod %q is waiting to start - no logs yet", container, podName), errdefs.ErrFailedPrecondition}
	}
	// A status carries "<runtime>://<id>"; CRI wants the bare ID.
	if _, after, ok := strings.Cut(id, "://"); ok {
		id = after
	}
	return id, nil
}

// statusError carries the kubelet's message as it is, and the sentinel it
// means for errors.Is.
type statusError struct {
	msg  string
	kind error
}

func (e statusError) Error() string { return e.msg }
func (e statusError) Unwrap() error { return e.kind }

// OptionsFrom turns PodLogOptions into ReadLogs options at now (the moment
// sinceSeconds counts back from), as the kubelet's NewLogOptions does; a
// sinceTime wins over sinceSeconds. ContainerExited is left to the caller.
func OptionsFrom(o *v1.PodLogOptions, now time.Time) Options {
	opts := Options{Follow: o.Follow, TailLines: o.TailLines, LimitBytes: o.LimitBytes, Timestamps: o.Timestamps}
	if o.SinceSeconds != nil {
		since := now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
		opts.SinceTime = &since
	}
	if o.SinceTime != nil {
		since := o.SinceTime.Time
		opts.SinceTime = &since
	}
	return opts
}

// ContainerLogs writes the log of the runtime container id according to
// opts: the log file is the one the runtime reports in its status, read by
// ReadLogs; a followed log ends when the container stops running (and the
// file is drained) or ctx ends. Matches the kubelet's
// kubeGenericRuntimeManager.GetContainerLogs.
//
// Errors: the runtime's, wrapped; a container without a log file wraps
// errdefs.ErrNotFound; otherwise ReadLogs'.
func ContainerLogs(ctx context.Context, rt ContainerStatuser, id string, opts Options, stdout, stderr io.Writer) error {
	st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return fmt.Errorf("container %s: %w", id, err)
	}
	path := st.GetStatus().GetLogPath()
	if path == "" {
		return fmt.Errorf("container %s has no log file: %w", id, errdefs.ErrNotFound)
	}
	if opts.Follow && opts.ContainerExited == nil {
		opts.ContainerExited = func() bool {
			st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
			return err != nil || st.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING
		}
	}
	return ReadLogs(ctx, path, opts, stdout, stderr)
}
