package fake

import (
	"context"
	"encoding/json"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerStatus returns a container's status: state, created / started /
// finished timestamps (ns), exit code, reason and message, image, labels,
// annotations, log path, mounts and resources. Lookup is O(1) for a full ID;
// unknown IDs are NotFound. Verbose adds an "info" JSON document.
func (r *Runtime) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	if err := r.inject(ctx, "ContainerStatus"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, err := r.st.container(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: r.containerStatusLocked(c)}
	if req.GetVerbose() {
		b, _ := json.Marshal(map[string]any{
			"sandboxID": c.sb.id,
			"pid":       pidOf(c),
			"removing":  c.removing,
			"imageID":   c.imageID,
		})
		resp.Info = map[string]string{"info": string(b)}
	}
	return resp, nil
}

// containerStatusLocked builds a fresh status. The reason of an exited
// container follows containerd's toCRIContainerStatus: the recorded reason
// (OOMKilled, StartError) if any, else Completed for exit code 0 and Error
// otherwise.
func (r *Runtime) containerStatusLocked(c *container) *runtimeapi.ContainerStatus {
	cfg := c.config
	st := &runtimeapi.ContainerStatus{
		Id:          c.id,
		Metadata:    copyContainerMetadata(cfg.GetMetadata()),
		State:       c.state,
		CreatedAt:   c.createdAt,
		StartedAt:   c.startedAt,
		FinishedAt:  c.finishedAt,
		ExitCode:    c.exitCode,
		Image:       &runtimeapi.ImageSpec{Image: c.imageName, UserSpecifiedImage: cfg.GetImage().GetUserSpecifiedImage(), Annotations: cloneMap(cfg.GetImage().GetAnnotations())},
		ImageRef:    c.imageRef,
		ImageId:     c.imageID,
		Reason:      c.reason,
		Message:     c.message,
		Labels:      cloneMap(cfg.GetLabels()),
		Annotations: cloneMap(cfg.GetAnnotations()),
		LogPath:     c.logPath,
		StopSignal:  cfg.GetStopSignal(),
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED && st.Reason == "" {
		if c.exitCode == 0 {
			st.Reason = reasonCompleted
		} else {
			st.Reason = reasonError
		}
	}
	for _, m := range cfg.GetMounts() {
		st.Mounts = append(st.Mounts, proto.CloneOf(m))
	}
	if c.resources != nil {
		st.Resources = proto.CloneOf(c.resources)
	}
	return st
}

// pidOf invents a stable pid for a running container, 0 otherwise.
func pidOf(c *container) int {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return 0
	}
	return 1000 + int(c.createdAt%30000)
}
