// Package connecterr is every splitlet service's one conversion from Go
// errors to Connect codes, so that the same failure reaches a client with
// the same code whichever process served it.
//
//	return nil, connecterr.From(err) // in a Connect handler
package connecterr

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"
	"google.golang.org/grpc/status"
)

// From returns err as a *connect.Error: one already is passes through,
// anything else gets Code(err) and keeps its message, so a client sees the
// field a bad request named. nil stays nil.
func From(err error) error {
	if err == nil {
		return nil
	}
	if ce := new(connect.Error); errors.As(err, &ce) {
		return err
	}
	return connect.NewError(Code(err), err)
}

// Code maps an error to its Connect code: context errors, errdefs sentinels
// (containerd's, which the gateway also turns into gRPC codes), a gRPC
// status carried by the error (a CRI error keeps the runtime's code), and
// Internal for anything else. A conflict is FailedPrecondition, as
// splitctl shows it (kubectl's Conflict).
func Code(err error) connect.Code {
	switch {
	case errors.Is(err, context.DeadlineExceeded), errdefs.IsDeadlineExceeded(err):
		return connect.CodeDeadlineExceeded
	case errors.Is(err, context.Canceled), errdefs.IsCanceled(err):
		return connect.CodeCanceled
	case errdefs.IsInvalidArgument(err):
		return connect.CodeInvalidArgument
	case errdefs.IsNotFound(err):
		return connect.CodeNotFound
	case errdefs.IsAlreadyExists(err):
		return connect.CodeAlreadyExists
	case errdefs.IsConflict(err), errdefs.IsFailedPrecondition(err):
		return connect.CodeFailedPrecondition
	case errdefs.IsUnavailable(err):
		return connect.CodeUnavailable
	case errdefs.IsNotImplemented(err):
		return connect.CodeUnimplemented
	case errdefs.IsResourceExhausted(err):
		return connect.CodeResourceExhausted
	case errdefs.IsPermissionDenied(err):
		return connect.CodePermissionDenied
	case errdefs.IsUnauthorized(err):
		return connect.CodeUnauthenticated
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if st, ok := status.FromError(e); ok && st.Code() != 0 {
			return connect.Code(st.Code())
		}
	}
	return connect.CodeInternal
}
