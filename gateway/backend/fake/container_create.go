package fake

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CreateContainer creates a CREATED container in a READY sandbox. As
// containerd's CreateContainer: the image must already be present (NotFound
// otherwise, "failed to resolve image"), and the name built from the
// container and sandbox metadata is reserved until the container is removed.
// The container's scripted behaviour is parsed here; a bad script fails the
// call with InvalidArgument naming the bad token.
//
// When the request carries no sandbox config, the one the sandbox was
// created with is used (containerd would refuse; being lenient costs nothing
// in a fake).
func (r *Runtime) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (_ *runtimeapi.CreateContainerResponse, retErr error) {
	if err := r.inject(ctx, "CreateContainer"); err != nil {
		return nil, err
	}
	cfg := req.GetConfig()
	if cfg.GetMetadata() == nil {
		return nil, fmt.Errorf("container config must include metadata: %w", errdefs.ErrInvalidArgument)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	sb, err := r.st.sandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, fmt.Errorf("failed to find sandbox id %q: %w", req.GetPodSandboxId(), err)
	}
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, fmt.Errorf("sandbox %q is not ready: %w", sb.id, errdefs.ErrFailedPrecondition)
	}
	sbCfg := req.GetSandboxConfig()
	if sbCfg.GetMetadata() == nil {
		sbCfg = sb.config
	}

	id := newID()
	name := makeContainerName(cfg.GetMetadata(), sbCfg.GetMetadata())
	if err := reserve(r.st.containerNames, name, id); err != nil {
		return nil, fmt.Errorf("failed to reserve container name %q: %w", name, err)
	}
	defer func() {
		if retErr != nil {
			delete(r.st.containerNames, name)
		}
	}()

	img, err := r.st.resolveImage(cfg.GetImage().GetImage())
	if err != nil {
		return nil, fmt.Errorf("failed to resolve image %q: %w", cfg.GetImage().GetImage(), err)
	}

	// An image volume's image must be present too: containerd resolves it
	// the same way and fails the creation when it is not (ImageVolume).
	for _, m := range cfg.GetMounts() {
		if ref := m.GetImage().GetImage(); ref != "" {
			if _, err := r.st.resolveImage(ref); err != nil {
				return nil, fmt.Errorf("failed to resolve image %q of the mount at %q: %w", ref, m.GetContainerPath(), err)
			}
		}
	}

	script, from := behaviorSource(cfg, sbCfg)
	beh, err := parseBehavior(script)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}

	c := &container{
		id:        id,
		name:      name,
		sb:        sb,
		config:    proto.CloneOf(cfg),
		imageID:   img.id,
		imageRef:  img.ref(),
		imageName: img.name(),
		state:     runtimeapi.ContainerState_CONTAINER_CREATED,
		createdAt: r.now(),
		beh:       beh,
		exited:    make(chan struct{}),
	}
	// containerd joins the sandbox log directory and the container log path
	// only when both are set (createContainer in container_create.go).
	if dir, p := sbCfg.GetLogDirectory(), cfg.GetLogPath(); dir != "" && p != "" {
		c.logPath = filepath.Join(dir, p)
	}
	if lr := cfg.GetLinux().GetResources(); lr != nil {
		c.resources = &runtimeapi.ContainerResources{Linux: proto.CloneOf(lr)}
	}
	r.st.addContainer(c)
	r.emitLocked(id, sb, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT)
	r.log(ctx).Debug("container created", zap.String("id", id), zap.String("name", name), zap.String("behavior", script))
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}
