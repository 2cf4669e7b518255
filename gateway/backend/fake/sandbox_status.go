package fake

import (
	"context"
	"encoding/json"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodSandboxStatus returns the sandbox's status and, as containerd 2.x does
// for the evented PLEG, the statuses of its containers and a timestamp.
// Lookup is O(1) for a full ID. Verbose adds an "info" JSON document.
func (r *Runtime) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := r.inject(ctx, "PodSandboxStatus"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	sb, err := r.st.sandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.PodSandboxStatusResponse{
		Status:             r.sandboxStatusLocked(sb),
		ContainersStatuses: r.containerStatusesLocked(sb),
		Timestamp:          r.now(),
	}
	if req.GetVerbose() {
		resp.Info = map[string]string{"info": sandboxInfo(sb)}
	}
	return resp, nil
}

// sandboxStatusLocked builds a fresh status; nothing in it is shared with
// the store.
func (r *Runtime) sandboxStatusLocked(sb *sandbox) *runtimeapi.PodSandboxStatus {
	st := &runtimeapi.PodSandboxStatus{
		Id:             sb.id,
		Metadata:       copySandboxMetadata(sb.config.GetMetadata()),
		State:          sb.state,
		CreatedAt:      sb.createdAt,
		Network:        &runtimeapi.PodSandboxNetworkStatus{Ip: sb.ip},
		Labels:         cloneMap(sb.config.GetLabels()),
		Annotations:    cloneMap(sb.config.GetAnnotations()),
		RuntimeHandler: sb.handler,
	}
	ns := sb.config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns == nil {
		ns = &runtimeapi.NamespaceOption{}
	}
	st.Linux = &runtimeapi.LinuxPodSandboxStatus{
		Namespaces: &runtimeapi.Namespace{Options: proto.CloneOf(ns)},
	}
	return st
}

// containerStatusesLocked returns the statuses of the sandbox's containers.
func (r *Runtime) containerStatusesLocked(sb *sandbox) []*runtimeapi.ContainerStatus {
	out := make([]*runtimeapi.ContainerStatus, 0, len(sb.containers))
	for _, c := range sb.containers {
		out = append(out, r.containerStatusLocked(c))
	}
	return out
}

// sandboxInfo is the verbose info, shaped like a subset of containerd's.
func sandboxInfo(sb *sandbox) string {
	cfg, _ := protojson.Marshal(sb.config)
	info := map[string]any{
		"id":             sb.id,
		"runtimeHandler": sb.handler,
		"ip":             sb.ip,
		"hostNetwork":    sb.hostNet,
		"containers":     strconv.Itoa(len(sb.containers)),
		"config":         json.RawMessage(cfg),
	}
	b, _ := json.Marshal(info)
	return string(b)
}
