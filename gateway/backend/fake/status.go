package fake

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version reports the fake's name and version and the CRI API version.
func (r *Runtime) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	if err := r.inject(ctx, "Version"); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{
		Version:           "0.1.0", // the kubelet runtime API version, as containerd reports it
		RuntimeName:       r.name,
		RuntimeVersion:    r.version,
		RuntimeApiVersion: criAPIVersion,
	}, nil
}

// Status reports the runtime and its network ready, and the runtime
// handlers RunPodSandbox accepts.
func (r *Runtime) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	if err := r.inject(ctx, "Status"); err != nil {
		return nil, err
	}
	resp := &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: true},
		}},
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
	}
	for _, h := range runtimeHandlers {
		resp.RuntimeHandlers = append(resp.RuntimeHandlers, &runtimeapi.RuntimeHandler{
			Name:     h,
			Features: &runtimeapi.RuntimeHandlerFeatures{},
		})
	}
	if req.GetVerbose() {
		r.mu.RLock()
		info, _ := json.Marshal(map[string]any{
			"runtime":    r.name,
			"version":    r.version,
			"sandboxes":  len(r.st.sandboxes),
			"containers": len(r.st.containers),
			"images":     len(r.st.images),
			"podCIDR":    r.st.podCIDR,
		})
		r.mu.RUnlock()
		resp.Info = map[string]string{"config": string(info)}
	}
	return resp, nil
}

// RuntimeConfig reports the cgroup driver of Options.SystemdCgroups.
func (r *Runtime) RuntimeConfig(ctx context.Context, _ *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	if err := r.inject(ctx, "RuntimeConfig"); err != nil {
		return nil, err
	}
	return &runtimeapi.RuntimeConfigResponse{
		Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: r.cgroups},
	}, nil
}

// UpdateRuntimeConfig records the pod CIDR (shown in verbose Status).
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	if err := r.inject(ctx, "UpdateRuntimeConfig"); err != nil {
		return nil, err
	}
	if cidr := req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr(); cidr != "" {
		r.mu.Lock()
		r.st.podCIDR = cidr
		r.mu.Unlock()
	}
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}

// ListMetricDescriptors returns no descriptors: the fake has no metrics
// beyond the stats RPCs.
func (r *Runtime) ListMetricDescriptors(ctx context.Context, _ *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	if err := r.inject(ctx, "ListMetricDescriptors"); err != nil {
		return nil, err
	}
	return &runtimeapi.ListMetricDescriptorsResponse{}, nil
}

// ListPodSandboxMetrics returns no metrics (see ListMetricDescriptors).
func (r *Runtime) ListPodSandboxMetrics(ctx context.Context, _ *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	if err := r.inject(ctx, "ListPodSandboxMetrics"); err != nil {
		return nil, err
	}
	return &runtimeapi.ListPodSandboxMetricsResponse{}, nil
}

// StreamPodSandboxMetrics sends nothing and ends: there are no metrics.
func (r *Runtime) StreamPodSandboxMetrics(_ *runtimeapi.StreamPodSandboxMetricsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxMetricsResponse]) error {
	return r.inject(stream.Context(), "StreamPodSandboxMetrics")
}

// CheckpointPod is not implemented: there is no process to checkpoint.
func (r *Runtime) CheckpointPod(ctx context.Context, _ *runtimeapi.CheckpointPodRequest) (*runtimeapi.CheckpointPodResponse, error) {
	if err := r.inject(ctx, "CheckpointPod"); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("fake runtime: CheckpointPod: %w", errdefs.ErrNotImplemented)
}

// RestorePod is not implemented (see CheckpointPod).
func (r *Runtime) RestorePod(ctx context.Context, _ *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	if err := r.inject(ctx, "RestorePod"); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("fake runtime: RestorePod: %w", errdefs.ErrNotImplemented)
}
