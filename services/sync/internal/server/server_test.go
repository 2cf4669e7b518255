package server

import (
	"errors"
	"fmt"
	"testing"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
)

func TestToConnectError(t *testing.T) {
	for _, tc := range []struct {
		desc string
		err  error
		want connect.Code
	}{
		{desc: "invalid argument", err: fmt.Errorf("document 1: %w", errdefs.ErrInvalidArgument), want: connect.CodeInvalidArgument},
		{desc: "not found", err: fmt.Errorf("pod x: %w", errdefs.ErrNotFound), want: connect.CodeNotFound},
		{desc: "conflict", err: fmt.Errorf("being deleted: %w", errdefs.ErrConflict), want: connect.CodeFailedPrecondition},
		{desc: "CRI status keeps its code", err: fmt.Errorf("exec: %w", status.Error(codes.DeadlineExceeded, "slow")), want: connect.CodeDeadlineExceeded},
		{desc: "anything else is internal", err: errors.New("boom"), want: connect.CodeInternal},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := connect.CodeOf(toConnectError(tc.err)); got != tc.want {
				t.Errorf("code = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestContainerID(t *testing.T) {
	pod := &v1.Pod{
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}, {Name: "side"}}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", ContainerID: "containerd://abc", LastTerminationState: v1.ContainerState{
				Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://old"}}},
			{Name: "side"},
		}},
	}
	for _, tc := range []struct {
		desc     string
		name     string
		previous bool
		want     string
		wantErr  error
	}{
		{desc: "current instance", name: "app", want: "abc"},
		{desc: "previous instance", name: "app", previous: true, want: "old"},
		{desc: "no previous instance", name: "side", previous: true, wantErr: errdefs.ErrNotFound},
		{desc: "waiting container", name: "side", wantErr: errdefs.ErrFailedPrecondition},
		{desc: "unknown container", name: "nope", wantErr: errdefs.ErrNotFound},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := containerID(pod, tc.name, tc.previous)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("containerID = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := containerName(pod, ""); !errdefs.IsInvalidArgument(err) {
		t.Errorf("containerName without a name in a two-container pod: %v, want InvalidArgument", err)
	}
}
