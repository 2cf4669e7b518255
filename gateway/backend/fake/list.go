package fake

import (
	"context"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// streamChunk is how many items each Stream* response carries at most.
const streamChunk = 500

// ListPodSandbox lists sandboxes matching every filter field: id (full or
// unique prefix, as containerd's filterCRISandboxes resolves it), state and
// label selector. A selector naming PodUIDLabel, as the kubelet's
// getSandboxIDByPodUID sends, is served from the pod UID index.
func (r *Runtime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := r.inject(ctx, "ListPodSandbox"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return &runtimeapi.ListPodSandboxResponse{Items: r.listSandboxesLocked(req.GetFilter())}, nil
}

func (r *Runtime) listSandboxesLocked(f *runtimeapi.PodSandboxFilter) []*runtimeapi.PodSandbox {
	sbs := r.filterSandboxesLocked(f.GetId(), f.GetState(), f.GetLabelSelector())
	out := make([]*runtimeapi.PodSandbox, 0, len(sbs))
	for _, sb := range sbs {
		out = append(out, &runtimeapi.PodSandbox{
			Id:             sb.id,
			Metadata:       copySandboxMetadata(sb.config.GetMetadata()),
			State:          sb.state,
			CreatedAt:      sb.createdAt,
			Labels:         cloneMap(sb.config.GetLabels()),
			Annotations:    cloneMap(sb.config.GetAnnotations()),
			RuntimeHandler: sb.handler,
		})
	}
	return out
}

// filterSandboxesLocked returns the sandboxes matching every filter field
// given. It scans only the candidates the most selective field allows: the
// one sandbox an id names, else the pod's sandboxes when the selector names
// PodUIDLabel, else all; every field is still checked on each candidate.
func (r *Runtime) filterSandboxesLocked(id string, state *runtimeapi.PodSandboxStateValue, selector map[string]string) []*sandbox {
	cands := r.st.sandboxes
	if id != "" {
		sb, err := r.st.sandbox(id)
		if err != nil {
			return nil
		}
		cands = map[string]*sandbox{sb.id: sb}
	} else if byPod, ok := r.st.sandboxesByPod.lookup(selector); ok {
		cands = byPod
	}
	var out []*sandbox
	if state == nil && len(selector) == 0 {
		out = make([]*sandbox, 0, len(cands))
	}
	for _, sb := range cands {
		if state != nil && state.GetState() != sb.state {
			continue
		}
		if !matchLabels(sb.config.GetLabels(), selector) {
			continue
		}
		out = append(out, sb)
	}
	return out
}

// ListContainers lists containers matching every filter field: id (full or
// unique prefix), state, pod_sandbox_id (full or unique prefix; served from
// the per-sandbox index) and label selector (a PodUIDLabel pair, as the
// kubelet's getPodContainerStatuses sends, is served from the pod UID
// index).
func (r *Runtime) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	if err := r.inject(ctx, "ListContainers"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return &runtimeapi.ListContainersResponse{Containers: r.listContainersLocked(req.GetFilter())}, nil
}

// filterContainersLocked returns the containers matching every filter field
// given: id and sandboxID (full IDs or unique prefixes), state (nil: any;
// stats filters have none) and the label selector. Like
// filterSandboxesLocked it scans only the smallest candidate set the fields
// allow (the one container an id names, the sandbox's containers, or the
// pod's containers by PodUIDLabel) and checks every field on each.
func (r *Runtime) filterContainersLocked(id, sandboxID string, state *runtimeapi.ContainerStateValue, selector map[string]string) []*container {
	var sb *sandbox
	if sandboxID != "" {
		var err error
		if sb, err = r.st.sandbox(sandboxID); err != nil {
			return nil
		}
	}
	var only *container
	if id != "" {
		var err error
		if only, err = r.st.container(id); err != nil {
			return nil
		}
	}
	cands := r.st.containers
	switch {
	case only != nil:
		cands = map[string]*container{only.id: only}
	case sb != nil:
		cands = sb.containers
		if byPod, ok := r.st.containersByPod.lookup(selector); ok && len(byPod) < len(cands) {
			cands = byPod
		}
	default:
		if byPod, ok := r.st.containersByPod.lookup(selector); ok {
			cands = byPod
		}
	}
	var out []*container
	if state == nil && len(selector) == 0 {
		out = make([]*container, 0, len(cands))
	}
	for _, c := range cands {
		if sb != nil && c.sb != sb {
			continue
		}
		if state != nil && state.GetState() != c.state {
			continue
		}
		if !matchLabels(c.config.GetLabels(), selector) {
			continue
		}
		out = append(out, c)
	}
	return out
}

func (r *Runtime) listContainersLocked(f *runtimeapi.ContainerFilter) []*runtimeapi.Container {
	cs := r.filterContainersLocked(f.GetId(), f.GetPodSandboxId(), f.GetState(), f.GetLabelSelector())
	out := make([]*runtimeapi.Container, 0, len(cs))
	for _, c := range cs {
		out = append(out, &runtimeapi.Container{
			Id:           c.id,
			PodSandboxId: c.sb.id,
			Metadata:     copyContainerMetadata(c.config.GetMetadata()),
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
