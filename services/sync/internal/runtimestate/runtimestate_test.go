package runtimestate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type statusRuntime struct {
	runtimeapi.RuntimeServiceClient
	resp *runtimeapi.StatusResponse
	err  error
}

func (s *statusRuntime) Status(context.Context, *runtimeapi.StatusRequest, ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	return s.resp, s.err
}

func status(network bool) *runtimeapi.StatusResponse {
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: network, Reason: "NetworkPluginNotReady", Message: "cni config uninitialized"},
	}}}
}

// The network is unknown until the runtime answers, follows its
// NetworkReady condition, and keeps the last answer while the runtime does
// not answer (the kubelet's updateRuntimeUp returns early on an error).
func TestNetworkFollowsTheRuntimesLastAnswer(t *testing.T) {
	rt := &statusRuntime{err: errors.New("connection refused")}
	s := New(rt)
	ctx := context.Background()
	s.Update(ctx)
	if !errors.Is(s.NetworkErrors(), ErrNetworkUnknown) {
		t.Fatalf("before any answer: %v", s.NetworkErrors())
	}
	rt.resp, rt.err = status(false), nil
	s.Update(ctx)
	want := "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni config uninitialized"
	if err := s.NetworkErrors(); err == nil || err.Error() != want {
		t.Fatalf("network not ready: %v, want %q", err, want)
	}
	rt.resp = status(true)
	s.Update(ctx)
	if err := s.NetworkErrors(); err != nil {
		t.Fatalf("network ready: %v", err)
	}
	rt.resp, rt.err = nil, errors.New("gateway restarting")
	s.Update(ctx)
	if err := s.NetworkErrors(); err != nil {
		t.Fatalf("after a failed call: %v, want the last answer (ready)", err)
	}
}

func TestErrorsNameAMissingCondition(t *testing.T) {
	runtimeErr, networkErr := Errors(&runtimeapi.RuntimeStatus{})
	if runtimeErr == nil || !strings.Contains(runtimeErr.Error(), "RuntimeReady condition missing") ||
		networkErr == nil || !strings.Contains(networkErr.Error(), "NetworkReady condition missing") {
		t.Errorf("errors %v, %v", runtimeErr, networkErr)
	}
}
