package criclient

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestTimeouts(t *testing.T) {
	const base = 10 * time.Second
	tests := []struct {
		desc string
		base time.Duration
		req  any
		want time.Duration // 0: no deadline
	}{
		{desc: "a plain call gets the request timeout", base: base, req: &runtimeapi.ListContainersRequest{}, want: base},
		{desc: "RunPodSandbox gets twice that", base: base, req: &runtimeapi.RunPodSandboxRequest{}, want: 2 * base},
		{desc: "StopContainer adds the grace period", base: base, req: &runtimeapi.StopContainerRequest{Timeout: 30}, want: base + 30*time.Second},
		{desc: "ExecSync adds the command's timeout", base: base, req: &runtimeapi.ExecSyncRequest{Timeout: 5}, want: base + 5*time.Second},
		{desc: "ExecSync without a timeout has none", base: base, req: &runtimeapi.ExecSyncRequest{}},
		{desc: "PullImage has none", base: base, req: &runtimeapi.PullImageRequest{}},
		{desc: "CheckpointContainer uses its own timeout when longer", base: base, req: &runtimeapi.CheckpointContainerRequest{Timeout: 30}, want: 30 * time.Second},
		{desc: "CheckpointContainer with a shorter one gets the request timeout", base: base, req: &runtimeapi.CheckpointContainerRequest{Timeout: 3}, want: base},
		{desc: "CheckpointContainer without one gets the request timeout", base: base, req: &runtimeapi.CheckpointContainerRequest{}, want: base},
		{desc: "a zero base disables the bound", base: 0, req: &runtimeapi.ListContainersRequest{}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			var got time.Duration
			hasDeadline := false
			invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
				var dl time.Time
				dl, hasDeadline = ctx.Deadline()
				got = time.Until(dl)
				return nil
			}
			if err := Timeouts(tc.base)(context.Background(), "/m", tc.req, nil, nil, invoker); err != nil {
				t.Fatal(err)
			}
			if tc.want == 0 {
				if hasDeadline {
					t.Errorf("deadline in %v, want none", got)
				}
				return
			}
			// The deadline was set just before the invoker read it.
			if !hasDeadline || got > tc.want || got < tc.want-time.Second {
				t.Errorf("deadline in %v (set %v), want %v", got, hasDeadline, tc.want)
			}
		})
	}
}

// A caller's earlier deadline is kept.
func TestTimeoutsKeepEarlierDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	want, _ := ctx.Deadline()
	invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		if got, _ := ctx.Deadline(); !got.Equal(want) {
			t.Errorf("deadline %v, want the caller's %v", got, want)
		}
		return nil
	}
	if err := Timeouts(time.Minute)(ctx, "/m", &runtimeapi.ListContainersRequest{}, nil, nil, invoker); err != nil {
		t.Fatal(err)
	}
}

// The runtime is asked to take at least the request timeout over a
// checkpoint, as the kubelet's CRI client asks it; the caller's request is
// left alone.
func TestTimeoutsRaiseCheckpointTimeout(t *testing.T) {
	tests := []struct {
		desc      string
		timeout   int64
		wantInRPC int64
	}{
		{desc: "none becomes the request timeout", timeout: 0, wantInRPC: 10},
		{desc: "a shorter one becomes the request timeout", timeout: 3, wantInRPC: 10},
		{desc: "a longer one is kept", timeout: 30, wantInRPC: 30},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			req := &runtimeapi.CheckpointContainerRequest{ContainerId: "c", Timeout: tc.timeout}
			var got *runtimeapi.CheckpointContainerRequest
			invoker := func(_ context.Context, _ string, r, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
				got = r.(*runtimeapi.CheckpointContainerRequest)
				return nil
			}
			if err := Timeouts(10*time.Second)(context.Background(), "/m", req, nil, nil, invoker); err != nil {
				t.Fatal(err)
			}
			if got.GetTimeout() != tc.wantInRPC || got.GetContainerId() != "c" {
				t.Errorf("the runtime was sent %v, want timeout %d", got, tc.wantInRPC)
			}
			if req.GetTimeout() != tc.timeout {
				t.Errorf("the caller's request was changed to %v", req)
			}
		})
	}
}
