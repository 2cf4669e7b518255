package connecterr

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestCode(t *testing.T) {
	for _, tc := range []struct {
		desc string
		err  error
		want connect.Code
	}{
		{desc: "invalid argument, wrapped", err: fmt.Errorf("spec.containers[0].image: %w", errdefs.ErrInvalidArgument), want: connect.CodeInvalidArgument},
		{desc: "not found", err: errdefs.ErrNotFound, want: connect.CodeNotFound},
		{desc: "conflict is FailedPrecondition", err: errdefs.ErrConflict, want: connect.CodeFailedPrecondition},
		{desc: "permission denied (sync once said Internal)", err: errdefs.ErrPermissionDenied, want: connect.CodePermissionDenied},
		{desc: "resource exhausted (sync once said Internal)", err: errdefs.ErrResourceExhausted, want: connect.CodeResourceExhausted},
		{desc: "unauthorized", err: errdefs.ErrUnauthenticated, want: connect.CodeUnauthenticated},
		{desc: "context deadline", err: fmt.Errorf("admit: %w", context.DeadlineExceeded), want: connect.CodeDeadlineExceeded},
		{desc: "a CRI error keeps the runtime's code", err: fmt.Errorf("start container: %w", status.Error(codes.NotFound, "no such container")), want: connect.CodeNotFound},
		{desc: "anything else", err: errors.New("boom"), want: connect.CodeInternal},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := Code(tc.err); got != tc.want {
				t.Errorf("Code(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestFromKeepsConnectErrors(t *testing.T) {
	ce := connect.NewError(connect.CodeAborted, errors.New("x"))
	if got := From(fmt.Errorf("wrapped: %w", ce)); connect.CodeOf(got) != connect.CodeAborted {
		t.Errorf("From changed a connect error's code to %v", connect.CodeOf(got))
	}
	if From(nil) != nil {
		t.Error("From(nil) != nil")
	}
}
