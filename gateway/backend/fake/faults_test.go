package fake

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"
)

func TestFaults(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		desc     string
		faults   []*gatewayv1.Fault
		wantCode codes.Code // of RunPodSandbox
		wantMsg  string
	}{
		{desc: "rate 1 fails with the code", faults: []*gatewayv1.Fault{{Method: "RunPodSandbox", ErrorRate: 1, Code: "ResourceExhausted", Message: "full"}},
			wantCode: codes.ResourceExhausted, wantMsg: "full"},
		{desc: "default code Unavailable and message", faults: []*gatewayv1.Fault{{Method: "RunPodSandbox", ErrorRate: 1}},
			wantCode: codes.Unavailable, wantMsg: "injected Unavailable fault for RunPodSandbox"},
		{desc: "proto-style code name", faults: []*gatewayv1.Fault{{Method: "*", ErrorRate: 1, Code: "DEADLINE_EXCEEDED"}},
			wantCode: codes.DeadlineExceeded},
		{desc: "wildcard", faults: []*gatewayv1.Fault{{Method: "*", ErrorRate: 1, Code: "Internal"}}, wantCode: codes.Internal},
		{desc: "rate 0 never fails", faults: []*gatewayv1.Fault{{Method: "RunPodSandbox", ErrorRate: 0, Code: "Internal"}}, wantCode: codes.OK},
		{desc: "other method unaffected", faults: []*gatewayv1.Fault{{Method: "StopPodSandbox", ErrorRate: 1}}, wantCode: codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newTestRuntime(t, Options{})
			if _, err := r.SetFaults(ctx, &gatewayv1.SetFaultsRequest{Faults: tc.faults}); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 20; i++ {
				cfg := sandboxConfig("p")
				cfg.Metadata.Attempt = uint32(i)
				_, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
				if got := status.Code(err); got != tc.wantCode {
					t.Fatalf("call %d: code %v (%v), want %v", i, got, err, tc.wantCode)
				}
				if tc.wantMsg != "" && !strings.Contains(status.Convert(err).Message(), tc.wantMsg) {
					t.Fatalf("message %q, want %q", status.Convert(err).Message(), tc.wantMsg)
				}
			}
			got, err := r.GetFaults(ctx, &gatewayv1.GetFaultsRequest{})
			if err != nil || len(got.Faults) != len(tc.faults) || got.Faults[0].Method != tc.faults[0].Method {
				t.Fatalf("GetFaults = %v, %v", got, err)
			}
		})
	}
}

func TestFaultRateIsSeeded(t *testing.T) {
	// Two runtimes with the same seed fail the same calls; about half fail.
	outcomes := func() []bool {
		r := newTestRuntime(t, Options{Seed: 42})
		r.SetFaults(context.Background(), &gatewayv1.SetFaultsRequest{Faults: []*gatewayv1.Fault{{Method: "Version", ErrorRate: 0.5}}})
		var out []bool
		for i := 0; i < 200; i++ {
			_, err := r.Version(context.Background(), &runtimeapi.VersionRequest{})
			out = append(out, err != nil)
		}
		return out
	}
	a, b := outcomes(), outcomes()
	failed := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("call %d differs between equally seeded runtimes", i)
		}
		if a[i] {
			failed++
		}
	}
	if failed < 50 || failed > 150 {
		t.Fatalf("%d of 200 calls failed at rate 0.5", failed)
	}
}

func TestFaultLatencyHonoursDeadline(t *testing.T) {
	r := newTestRuntime(t, Options{})
	r.SetFaults(context.Background(), &gatewayv1.SetFaultsRequest{Faults: []*gatewayv1.Fault{{Method: "Version", Latency: durationpb.New(time.Hour)}}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := r.Version(ctx, &runtimeapi.VersionRequest{})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
}

// A hung call answers nothing until its caller gives up, and then with the
// caller's reason; the runtime keeps serving other calls meanwhile.
func TestFaultHangUntilCallerGivesUp(t *testing.T) {
	r := newTestRuntime(t, Options{})
	if _, err := r.SetFaults(context.Background(), &gatewayv1.SetFaultsRequest{Faults: []*gatewayv1.Fault{{Method: "Version", HangRate: 1}}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Version(ctx, &runtimeapi.VersionRequest{})
		done <- err
	}()
	if _, err := r.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{}); err != nil {
		t.Fatalf("another call while one hangs: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("hung call returned before its caller gave up: %v", err)
	default:
	}
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Fatalf("err = %v, want Canceled", err)
	}
}

func TestFaultOnEventStream(t *testing.T) {
	r := newTestRuntime(t, Options{})
	r.SetFaults(context.Background(), &gatewayv1.SetFaultsRequest{Faults: []*gatewayv1.Fault{{Method: "GetContainerEvents", ErrorRate: 1, Code: "Unimplemented"}}})
	err := r.GetContainerEvents(&runtimeapi.GetEventsRequest{}, newEventStream(context.Background()))
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("err = %v, want Unimplemented", err)
	}
}

func TestSetFaultsValidation(t *testing.T) {
	tests := []struct {
		desc string
		req  *gatewayv1.SetFaultsRequest
	}{
		{desc: "unknown code", req: &gatewayv1.SetFaultsRequest{Faults: []*gatewayv1.Fault{{Method: "*", Code: "Sometimes"}}}},
		{desc: "rate above 1", req: &gatewayv1.SetFaultsRequest{Faults: []*gatewayv1.Fault{{Method: "*", ErrorRate: 1.5}}}},
		{desc: "hang rate below 0", req: &gatewayv1.SetFaultsRequest{Faults: []*gatewayv1.Fault{{Method: "*", HangRate: -0.5}}}},
		{desc: "no method", req: &gatewayv1.SetFaultsRequest{Faults: []*gatewayv1.Fault{{ErrorRate: 1}}}},
		{desc: "bad regexp", req: &gatewayv1.SetFaultsRequest{PullFailures: []string{"("}}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			r := newTestRuntime(t, Options{})
			if _, err := r.SetFaults(context.Background(), tc.req); !errdefs.IsInvalidArgument(err) {
				t.Fatalf("err = %v, want InvalidArgument", err)
			}
			if got, _ := r.GetFaults(context.Background(), &gatewayv1.GetFaultsRequest{}); len(got.Faults)+len(got.PullFailures) != 0 {
				t.Fatalf("a rejected request changed the faults: %v", got)
			}
		})
	}
}
