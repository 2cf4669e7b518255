// Package podstats reads the usage of the node's pods for the eviction
// manager from the runtime gateway over CRI (ListPodSandbox and
// ListPodSandboxStats), as the kubelet's CRI stats provider does when it
// does not use cAdvisor. It implements eviction.PodStatsProvider. It also
// reads what the runtime says it supports (NodeFeatures), for the node
// admission judges pods against.
//
//	stats, err := podstats.Dial("unix:///run/splitlet/gateway.sock")
//	defer stats.Close()
//	source := eviction.NewMachineSource(eviction.MachineConfig{}, stats)
package podstats

import (
	"context"
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/criclient"
	"github.com/splitlet/splitlet/services/admission/eviction"
)

// CRI lists pod stats through a CRI RuntimeService.
type CRI struct {
	client runtimeapi.RuntimeServiceClient
	conn   *grpc.ClientConn
}

var _ eviction.PodStatsProvider = (*CRI)(nil)

// New returns a provider over an existing client; Close is then a no-op.
func New(client runtimeapi.RuntimeServiceClient) *CRI {
	return &CRI{client: client}
}

// Dial connects to a CRI endpoint: a unix socket path or unix:// URL. The
// connection is made lazily, so a gateway that starts later is found then;
// until it answers, ListPodStats fails with errdefs.ErrUnavailable. opts
// are added to the connection's own (tracing's stats handler).
func Dial(endpoint string, opts ...grpc.DialOption) (*CRI, error) {
	target := endpoint
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
	case strings.HasPrefix(endpoint, "/"):
		target = "unix://" + endpoint
	default:
		return nil, fmt.Errorf("CRI endpoint %q: want a unix socket path or unix:// URL: %w", endpoint, errdefs.ErrInvalidArgument)
	}
	// Bounded like sync's calls: a hung stats call must not stall the
	// eviction manager's loop for ever.
	conn, err := grpc.NewClient(target, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(criclient.ConnectParams),
		grpc.WithChainUnaryInterceptor(criclient.Timeouts(criclient.DefaultRequestTimeout))}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("CRI endpoint %q: %v: %w", endpoint, err, errdefs.ErrInvalidArgument)
	}
	return &CRI{client: runtimeapi.NewRuntimeServiceClient(conn), conn: conn}, nil
}

// Close closes the connection Dial made.
func (c *CRI) Close() error {
	if c.conn == nil {
		return nil
	}
	return c.conn.Close()
}

// ListPodStats implements eviction.PodStatsProvider: one entry per READY
// sandbox, keyed by the pod UID in its metadata. A pod whose old sandbox
// lingers NOTREADY beside a new one is reported once, from the ready one;
// the kubelet's CRI stats provider likewise reports one sandbox per pod
// (removeTerminatedPods keeps the newest). Values the runtime leaves out stay
// zero.
func (c *CRI) ListPodStats(ctx context.Context) ([]eviction.PodStats, error) {
	sandboxes, err := c.client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}},
	})
	if err != nil {
		return nil, fromStatus("ListPodSandbox", err)
	}
	ready := make(map[string]bool, len(sandboxes.GetItems()))
	for _, s := range sandboxes.GetItems() {
		// The filter is advisory for a runtime that ignores it.
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready[s.GetId()] = true
		}
	}
	resp, err := c.client.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
	if err != nil {
		return nil, fromStatus("ListPodSandboxStats", err)
	}
	var out []eviction.PodStats
	for _, s := range resp.GetStats() {
		attrs := s.GetAttributes()
		if !ready[attrs.GetId()] || attrs.GetMetadata().GetUid() == "" {
			continue
		}
		out = append(out, podStats(s))
	}
	return out, nil
}

// NodeFeatures returns the node's status.features as the runtime reports
// them in CRI Status, the kubelet's toKubeRuntimeStatus and NodeFeatures
// setter: whether it honours supplementalGroupsPolicy Strict. It is nil
// when the runtime reports no features (containerd 1.6), which leaves the
// node's as they were. A runtime that is not RuntimeReady fails with
// errdefs.ErrUnavailable, as updateRuntimeUp keeps the previous features
// then.
func (c *CRI) NodeFeatures(ctx context.Context) (*v1.NodeFeatures, error) {
	resp, err := c.client.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return nil, fromStatus("Status", err)
	}
	ready := false
	for _, cond := range resp.GetStatus().GetConditions() {
		if cond.GetType() == runtimeapi.RuntimeReady {
			ready = cond.GetStatus()
		}
	}
	if !ready {
		return nil, fmt.Errorf("Status: the runtime is not %s: %w", runtimeapi.RuntimeReady, errdefs.ErrUnavailable)
	}
	f := resp.GetFeatures()
	if f == nil {
		return nil, nil
	}
	strict := f.GetSupplementalGroupsPolicy()
	return &v1.NodeFeatures{SupplementalGroupsPolicy: &strict}, nil
}

func podStats(s *runtimeapi.PodSandboxStats) eviction.PodStats {
	md := s.GetAttributes().GetMetadata()
	linux := s.GetLinux()
	ps := eviction.PodStats{
		UID:                   types.UID(md.GetUid()),
		Namespace:             md.GetNamespace(),
		Name:                  md.GetName(),
		MemoryWorkingSetBytes: linux.GetMemory().GetWorkingSetBytes().GetValue(),
		ProcessCount:          linux.GetProcess().GetProcessCount().GetValue(),
	}
	for _, cs := range linux.GetContainers() {
		ps.Containers = append(ps.Containers, eviction.ContainerStats{
			Name:                  cs.GetAttributes().GetMetadata().GetName(),
			MemoryWorkingSetBytes: cs.GetMemory().GetWorkingSetBytes().GetValue(),
			Rootfs: eviction.FsUsage{
				UsedBytes:  cs.GetWritableLayer().GetUsedBytes().GetValue(),
				InodesUsed: cs.GetWritableLayer().GetInodesUsed().GetValue(),
			},
		})
	}
	return ps
}

// fromStatus classifies a CRI error for the eviction manager, which skips
// the cycle on any error: Unavailable for a gateway that cannot be reached
// or took too long, Unknown otherwise.
func fromStatus(call string, err error) error {
	var sentinel error = errdefs.ErrUnknown
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		sentinel = errdefs.ErrUnavailable
	case codes.Unimplemented:
		sentinel = errdefs.ErrNotImplemented
	}
	return fmt.Errorf("%s: %v: %w", call, err, sentinel)
}
