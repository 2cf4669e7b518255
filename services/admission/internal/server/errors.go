package server

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"
)

// toConnectError is the service's one conversion from Go errors to Connect
// codes: a *connect.Error passes through, errdefs sentinels and context
// errors get their code, anything else is Internal. The message is the
// error's own, so clients see the field a bad request named.
func toConnectError(err error) error {
	if err == nil {
		return nil
	}
	if ce := new(connect.Error); errors.As(err, &ce) {
		return err
	}
	return connect.NewError(codeOf(err), err)
}

func codeOf(err error) connect.Code {
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
	case errdefs.IsFailedPrecondition(err):
		return connect.CodeFailedPrecondition
	case errdefs.IsUnavailable(err):
		return connect.CodeUnavailable
	case errdefs.IsNotImplemented(err):
		return connect.CodeUnimplemented
	case errdefs.IsResourceExhausted(err):
		return connect.CodeResourceExhausted
	case errdefs.IsPermissionDenied(err):
		return connect.CodePermissionDenied
	default:
		return connect.CodeInternal
	}
}
