package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"

	"connectrpc.com/connect"
)

// StatusError is a server error as kubectl prints one:
// `Error from server (NotFound): pods "x" not found`.
type StatusError struct {
	// Code is the Connect code the server answered with.
	Code connect.Code
	// Reason is the Kubernetes StatusReason matching Code, e.g. "NotFound".
	Reason string
	// Message is the human part after the reason.
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("Error from server (%s): %s", e.Reason, e.Message)
}

// ConnectionError is a failure to reach the server at all, printed as
// kubectl's StandardErrorMessage prints a refused or failed connection.
type ConnectionError struct {
	Server string
	Err    error
}

func (e *ConnectionError) Error() string {
	if errors.Is(e.Err, syscall.ECONNREFUSED) {
		return fmt.Sprintf("The connection to the server %s was refused - did you specify the right host or port?", e.host())
	}
	return fmt.Sprintf("Unable to connect to the server: %v", e.Err)
}

func (e *ConnectionError) Unwrap() error { return e.Err }

func (e *ConnectionError) host() string {
	if u, err := url.Parse(e.Server); err == nil && u.Host != "" {
		return u.Host
	}
	return e.Server
}

// IsNotFound reports whether err is the server saying the object does not exist.
func IsNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == connect.CodeNotFound
}

// reasons maps Connect codes to the Kubernetes StatusReason kubectl would
// show for the equivalent HTTP status.
var reasons = map[connect.Code]string{
	connect.CodeInvalidArgument:    "BadRequest",
	connect.CodeOutOfRange:         "BadRequest",
	connect.CodeNotFound:           "NotFound",
	connect.CodeAlreadyExists:      "AlreadyExists",
	connect.CodePermissionDenied:   "Forbidden",
	connect.CodeUnauthenticated:    "Unauthorized",
	connect.CodeFailedPrecondition: "Conflict",
	connect.CodeAborted:            "Conflict",
	connect.CodeResourceExhausted:  "TooManyRequests",
	connect.CodeDeadlineExceeded:   "Timeout",
	connect.CodeUnimplemented:      "MethodNotAllowed",
	connect.CodeUnavailable:        "ServiceUnavailable",
	connect.CodeInternal:           "InternalError",
	connect.CodeUnknown:            "InternalError",
	connect.CodeDataLoss:           "InternalError",
}

// named is what every PodService request naming one pod has.
type named interface {
	GetNamespace() string
	GetName() string
}

// convert turns an error from a PodService call into a StatusError or a
// ConnectionError. It is the only place Connect codes are interpreted.
// req is the request message, used to name the pod as kubectl does.
func convert(err error, server string, req any) error {
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	if isDialError(err) {
		return &ConnectionError{Server: server, Err: err}
	}
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return err
	}
	if ce.Code() == connect.CodeCanceled {
		return err
	}
	se := &StatusError{Code: ce.Code(), Reason: reasons[ce.Code()], Message: ce.Message()}
	if se.Reason == "" {
		se.Reason = "InternalError"
	}
	if n, ok := req.(named); ok && n.GetName() != "" {
		// kubectl's messages come from the API server's NewNotFound and
		// NewAlreadyExists; the same wording is built here so scripts that
		// grep kubectl's output keep working.
		switch ce.Code() {
		case connect.CodeNotFound:
			se.Message = fmt.Sprintf("pods %q not found", n.GetName())
		case connect.CodeAlreadyExists:
			se.Message = fmt.Sprintf("pods %q already exists", n.GetName())
		}
	}
	return se
}

// isDialError reports a failure to open a connection (refused, unknown host,
// unreachable), as opposed to an error the server answered with.
func isDialError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}
