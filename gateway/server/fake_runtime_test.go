package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend"
	"github.com/splitlet/splitlet/internal/logctx"
	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"
)

// testRuntime is a hand-written backend whose replies exercise the server's
// layers: errdefs errors, status errors, panics, slow calls, and a record of
// what reached it and with which deadline.
type testRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	mu        sync.Mutex
	calls     []string                 // methods that reached the backend
	deadlines map[string]time.Duration // remaining time at entry; -1 = none
}

var _ backend.Runtime = (*testRuntime)(nil)

func newTestRuntime() *testRuntime {
	return &testRuntime{deadlines: map[string]time.Duration{}}
}

func (r *testRuntime) note(ctx context.Context, method string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, method)
	remaining := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		remaining = time.Until(dl)
	}
	r.deadlines[method] = remaining
}

func (r *testRuntime) called(method string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		if c == method {
			return true
		}
	}
	return false
}

func (r *testRuntime) deadline(method string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deadlines[method]
}

func (r *testRuntime) Close() error {
	r.note(context.Background(), "Close")
	return nil
}

func (r *testRuntime) Version(ctx context.Context, _ *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	r.note(ctx, "Version")
	logctx.From(ctx).Info("backend saw Version")
	return &runtimeapi.VersionResponse{RuntimeName: "test", RuntimeVersion: "1.0", RuntimeApiVersion: "v1"}, nil
}

func (r *testRuntime) RunPodSandbox(ctx context.Context, _ *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	r.note(ctx, "RunPodSandbox")
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: "sb1"}, nil
}

func (r *testRuntime) CreateContainer(ctx context.Context, _ *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	r.note(ctx, "CreateContainer")
	return &runtimeapi.CreateContainerResponse{ContainerId: "c1"}, nil
}

func (r *testRuntime) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	r.note(ctx, "StartContainer")
	switch req.GetContainerId() {
	case "status":
		// A runtime's own status error, as the cri backend forwards it.
		return nil, status.Error(codes.FailedPrecondition, "container c1 is in CONTAINER_EXITED state")
	case "plain":
		return nil, errors.New("something broke")
	case "wrapped-status":
		return nil, fmt.Errorf("start: %w", status.Error(codes.ResourceExhausted, "no room"))
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

func (r *testRuntime) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	r.note(ctx, "ContainerStatus")
	return nil, fmt.Errorf("container %q: %w", req.GetContainerId(), errdefs.ErrNotFound)
}

func (r *testRuntime) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	r.note(ctx, "ListContainers")
	if req.GetFilter().GetId() == "panic" {
		panic("test panic")
	}
	return &runtimeapi.ListContainersResponse{}, nil
}

// PodSandboxStatus of "slow" takes 300ms, to be in flight during a shutdown.
func (r *testRuntime) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.note(ctx, "PodSandboxStatus")
	if req.GetPodSandboxId() == "slow" {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: req.GetPodSandboxId()}}, nil
}

func (r *testRuntime) ExecSync(ctx context.Context, _ *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	r.note(ctx, "ExecSync")
	return &runtimeapi.ExecSyncResponse{}, nil
}

func (r *testRuntime) StopContainer(ctx context.Context, _ *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	r.note(ctx, "StopContainer")
	return &runtimeapi.StopContainerResponse{}, nil
}

func (r *testRuntime) PullImage(ctx context.Context, _ *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	r.note(ctx, "PullImage")
	return &runtimeapi.PullImageResponse{ImageRef: "sha256:1"}, nil
}

// GetContainerEvents sends one event, then waits for its context to end and
// returns nil, as a backend that treats a cancelled watch as a clean end would.
func (r *testRuntime) GetContainerEvents(_ *runtimeapi.GetEventsRequest, srv grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	r.note(srv.Context(), "GetContainerEvents")
	if err := srv.Send(&runtimeapi.ContainerEventResponse{ContainerId: "c1"}); err != nil {
		return err
	}
	<-srv.Context().Done()
	return nil
}

// controlRuntime is a backend that can also be scripted.
type controlRuntime struct {
	*testRuntime
	gatewayv1.UnimplementedFakeControlServiceServer
}

func (c *controlRuntime) GetFaults(context.Context, *gatewayv1.GetFaultsRequest) (*gatewayv1.GetFaultsResponse, error) {
	return &gatewayv1.GetFaultsResponse{PullFailures: []string{"marker"}}, nil
}
