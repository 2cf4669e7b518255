package fake

import (
	"context"
	"fmt"
	"maps"

	"github.com/containerd/errdefs"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UpdateContainerResources records the new resources; ContainerStatus
// returns them. As containerd's UpdateContainerResources, an exited
// container cannot be updated.
func (r *Runtime) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	if err := r.inject(ctx, "UpdateContainerResources"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.st.container(req.GetContainerId())
	if err != nil {
		return nil, fmt.Errorf("failed to find container: %w", err)
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		return nil, fmt.Errorf("container %q is in %s state, resources cannot be updated: %w", c.id, c.state, errdefs.ErrFailedPrecondition)
	}
	res := &runtimeapi.ContainerResources{}
	if req.GetLinux() != nil {
		res.Linux = proto.CloneOf(req.GetLinux())
	}
	if req.GetWindows() != nil {
		res.Windows = proto.CloneOf(req.GetWindows())
	}
	c.resources = res
	if len(req.GetAnnotations()) > 0 {
		// The config is private to the store; replace its annotations map
		// rather than writing into one a caller might hold.
		ann := cloneMap(c.config.GetAnnotations())
		if ann == nil {
			ann = map[string]string{}
		}
		maps.Copy(ann, req.GetAnnotations())
		c.config.Annotations = ann
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// UpdatePodSandboxResources records the sandbox's overhead and resources.
func (r *Runtime) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	if err := r.inject(ctx, "UpdatePodSandboxResources"); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sb, err := r.st.sandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if req.GetOverhead() != nil {
		sb.overhead = proto.CloneOf(req.GetOverhead())
	}
	if req.GetResources() != nil {
		sb.resources = proto.CloneOf(req.GetResources())
	}
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}
