package fake

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CheckpointConfigFile is the member of a fake checkpoint archive that
// describes the container, named as containerd's (config.dump).
const CheckpointConfigFile = "config.dump"

// CheckpointConfig is what a fake checkpoint archive says about its
// container: no process image (the fake has no process), only enough for a
// reader to tell which container was checkpointed and when.
type CheckpointConfig struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	Image          string    `json:"rootfsImageName"`
	ImageRef       string    `json:"rootfsImageRef"`
	State          string    `json:"state"`
	CheckpointedAt time.Time `json:"checkpointedAt"`
}

// CheckpointContainer writes a tar archive at req.Location holding
// CheckpointConfigFile, as containerd's CRI plugin writes its checkpoint
// archive there. As containerd: an unknown container is NotFound, one that
// is not running is refused with containerd's words, and the call is bounded
// by req.Timeout seconds when set (an injected latency longer than that
// fails DeadlineExceeded). An empty location is InvalidArgument (containerd
// fails opening "").
func (r *Runtime) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) (*runtimeapi.CheckpointContainerResponse, error) {
	if t := req.GetTimeout(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		defer cancel()
	}
	if err := r.inject(ctx, "CheckpointContainer"); err != nil {
		return nil, err
	}
	cfg, err := r.checkpointConfig(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	if req.GetLocation() == "" {
		return nil, fmt.Errorf("fake runtime: CheckpointContainer: location is required: %w", errdefs.ErrInvalidArgument)
	}
	if err := writeCheckpoint(req.GetLocation(), cfg); err != nil {
		return nil, fmt.Errorf("fake runtime: CheckpointContainer %q: %w", cfg.ID, err)
	}
	return &runtimeapi.CheckpointContainerResponse{}, nil
}

// checkpointConfig describes a running container, read under the state lock
// so that the archive is written without it.
func (r *Runtime) checkpointConfig(id string) (*CheckpointConfig, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, err := r.st.container(id)
	if err != nil {
		return nil, fmt.Errorf("an error occurred when trying to find container %q: %w", id, err)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		// containerd's words, an error of no errdefs kind (gRPC Unknown).
		return nil, fmt.Errorf("container %q is in %s state. only %s containers can be checkpointed",
			c.id, c.state, runtimeapi.ContainerState_CONTAINER_RUNNING)
	}
	return &CheckpointConfig{
		ID: c.id, Name: c.name, Image: c.imageName, ImageRef: c.imageRef,
		State: c.state.String(), CheckpointedAt: r.clock(),
	}, nil
}

// writeCheckpoint writes the archive at path (0600, as containerd's),
// removing what it wrote when it fails.
func writeCheckpoint(path string, cfg *CheckpointConfig) (retErr error) {
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err := f.Close(); err != nil && retErr == nil {
			retErr = err
		}
		if retErr != nil {
			_ = os.Remove(path)
		}
	}()
	tw := tar.NewWriter(f)
	hdr := &tar.Header{Name: CheckpointConfigFile, Mode: 0o600, Size: int64(len(data)), ModTime: cfg.CheckpointedAt, Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	return tw.Close()
}
