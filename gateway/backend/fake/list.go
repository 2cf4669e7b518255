package fake

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// streamChunk is how many items each Stream* response carries at most.
const streamChunk = 500

// ListPodSandbox lists sandboxes matching every filter field: id (full or
// unique prefix, as containerd's filterCRISandboxes resolves it), state and
// label selector.
func (r *Runtime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := r.inject(ctx, "ListPodSandbox"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return &runtimeapi.ListPodSandboxResponse{Items: r.listSandboxesLocked(req.GetFilter())}, nil
}

func (r *Runtime) listSandboxesLocked(f *runtimeapi.PodSandboxFilter) []*runtimeapi.PodSandbox {
	cands := r.st.sandboxes
	if f.GetId() != "" {
		sb, err := r.st.sandbox(f.GetId())
		if err != nil {
			return []*runtimeapi.PodSandbox{}
		}
		cands = map[string]*sandbox{sb.id: sb}
	}
	out := make([]*runtimeapi.PodSandbox, 0, len(cands))
	for _, sb := range cands {
		if f.GetState() != nil && f.GetState().GetState() != sb.state {
			continue
		}
		if !matchLabels(sb.config.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id:             sb.id,
			Metadata:       proto.CloneOf(sb.config.GetMetadata()),
			State:          sb.state,
			CreatedAt:      sb.createdAt,
			Labels:         cloneMap(sb.config.GetLabels()),
			Annotations:    cloneMap(sb.config.GetAnnotations()),
			RuntimeHandler: sb.handler,
		})
	}
	return out
}

// ListContainers lists containers matching every filter field: id (full or
// unique prefix), state, pod_sandbox_id (full or unique prefix; served from
// the per-sandbox index) and label selector.
func (r *Runtime) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	if err := r.inject(ctx, "ListContainers"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return &runtimeapi.ListContainersResponse{Containers: r.listContainersLocked(req.GetFilter())}, nil
}

// filterContainersLocked returns the containers matching f's id, sandbox and
// labels (not state: stats filters have none).
func (r *Runtime) filterContainersLocked(id, sandboxID string, selector map[string]string) []*container {
	cands := r.st.containers
	if sandboxID != "" {
		sb, err := r.st.sandbox(sandboxID)
		if err != nil {
			return nil
		}
		cands = sb.containers
	}
	if id != "" {
		c, err := r.st.container(id)
		if err != nil || (sandboxID != "" && cands[c.id] == nil) {
			return nil
		}
		cands = map[string]*container{c.id: c}
	}
	out := make([]*container, 0, len(cands))
	for _, c := range cands {
		if matchLabels(c.config.GetLabels(), selector) {
			out = append(out, c)
		}
	}
	return out
}

func (r *Runtime) listContainersLocked(f *runtimeapi.ContainerFilter) []*runtimeapi.Container {
	cs := r.filterContainersLocked(f.GetId(), f.GetPodSandboxId(), f.GetLabelSelector())
	out := make([]*runtimeapi.Container, 0, len(cs))
	for _, c := range cs {
		if f.GetState() != nil && f.GetState().GetState() != c.state {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id:           c.id,
			PodSandboxId: c.sb.id,
			Metadata:     proto.CloneOf(c.config.GetMetadata()),
			Image:        &runtimeapi.ImageSpec{Image: c.imageName, UserSpecifiedImage: c.config.GetImage().GetUserSpecifiedImage()},
			ImageRef:     c.imageRef,
			ImageId:      c.imageID,
			State:        c.state,
			CreatedAt:    c.createdAt,
			Labels:       cloneMap(c.config.GetLabels()),
			Annotations:  cloneMap(c.config.GetAnnotations()),
		})
	}
	return out
}

// StreamPodSandboxes is ListPodSandbox in chunks of up to 500 items.
func (r *Runtime) StreamPodSandboxes(req *runtimeapi.StreamPodSandboxesRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxesResponse]) error {
	if err := r.inject(stream.Context(), "StreamPodSandboxes"); err != nil {
		return err
	}
	r.mu.RLock()
	items := r.listSandboxesLocked(req.GetFilter())
	r.mu.RUnlock()
	return sendChunks(items, func(chunk []*runtimeapi.PodSandbox) error {
		return stream.Send(&runtimeapi.StreamPodSandboxesResponse{PodSandboxes: chunk})
	})
}

// StreamContainers is ListContainers in chunks of up to 500 items.
func (r *Runtime) StreamContainers(req *runtimeapi.StreamContainersRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamContainersResponse]) error {
	if err := r.inject(stream.Context(), "StreamContainers"); err != nil {
		return err
	}
	r.mu.RLock()
	items := r.listContainersLocked(req.GetFilter())
	r.mu.RUnlock()
	return sendChunks(items, func(chunk []*runtimeapi.Container) error {
		return stream.Send(&runtimeapi.StreamContainersResponse{Containers: chunk})
	})
}

// sendChunks sends items in lists of at least one and at most streamChunk
// items; an empty result sends nothing, as the CRI allows.
func sendChunks[T any](items []T, send func([]T) error) error {
	for len(items) > 0 {
		n := min(len(items), streamChunk)
		if err := send(items[:n]); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}
