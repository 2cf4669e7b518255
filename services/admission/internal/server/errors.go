package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/splitlet/splitlet/internal/connecterr"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"
	"google.golang.org/protobuf/proto"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
)

// toConnectError is the service's one conversion from Go errors to Connect
// codes, by the rule every splitlet service shares (connecterr.Code): a
// *connect.Error passes through, errdefs sentinels and context errors get
// their code, anything else is Internal. The message is the
// error's own, so clients see the field a bad request named.
func toConnectError(err error) error {
	if err == nil {
		return nil
	}
	if ce := new(connect.Error); errors.As(err, &ce) {
		return err
	}
	ce := connect.NewError(connecterr.Code(err), err)
	// The client resends exactly what the detail names; the message says
	// the same for people.
	var withDetail interface{ detail() proto.Message }
	if errors.As(err, &withDetail) {
		if d, derr := connect.NewErrorDetail(withDetail.detail()); derr == nil {
			ce.AddDetail(d)
		}
	}
	return ce
}

// unknownActivePodsError is a request naming, by reference, active pods
// this server does not hold: it restarted since the client sent them, or
// forgot pods no request named for a while. It is FailedPrecondition with
// an UnknownActivePods detail listing the UIDs, which the client sends in
// full on its next try.
type unknownActivePodsError struct {
	uids []string
}

// unknownUIDsShown bounds the UIDs the message lists; the detail has all.
const unknownUIDsShown = 8

func (e *unknownActivePodsError) Error() string {
	shown := e.uids[:min(len(e.uids), unknownUIDsShown)]
	more := ""
	if len(e.uids) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(e.uids)-len(shown))
	}
	return fmt.Sprintf("active pods sent by reference are not held by this admission server, send them in full: %s%s",
		strings.Join(shown, ", "), more)
}

func (e *unknownActivePodsError) Unwrap() error { return errdefs.ErrFailedPrecondition }

func (e *unknownActivePodsError) detail() proto.Message {
	return &admissionv1.UnknownActivePods{Uids: e.uids}
}

// unknownActiveSetError is a request naming by its digest alone an active
// set this server does not hold: it restarted, or forgot a set no request
// named while newer ones came. It is FailedPrecondition with an
// UnknownActiveSet detail; the client sends the set's references next.
type unknownActiveSetError struct {
	digest []byte
}

func (e *unknownActiveSetError) Error() string {
	return fmt.Sprintf("active set %x is not held by this admission server, send its pods", e.digest)
}

func (e *unknownActiveSetError) Unwrap() error { return errdefs.ErrFailedPrecondition }

func (e *unknownActiveSetError) detail() proto.Message {
	return &admissionv1.UnknownActiveSet{Digest: e.digest}
}
