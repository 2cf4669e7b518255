package server

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"github.com/containerd/errdefs"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/services/admission/eviction"
)

// ReportReclaim implements AdmissionServiceHandler: sync's answer to a
// reclaim request it received on WatchEvictions, handed to the eviction
// manager, which observes the node again before evicting anyone. Without
// an eviction manager no request was ever made: NotFound.
func (s *Service) ReportReclaim(ctx context.Context, req *connect.Request[admissionv1.ReportReclaimRequest]) (*connect.Response[admissionv1.ReportReclaimResponse], error) {
	id := req.Msg.GetId()
	if id == "" {
		return nil, toConnectError(fmt.Errorf("id: required: %w", errdefs.ErrInvalidArgument))
	}
	if s.evictions == nil {
		return nil, toConnectError(fmt.Errorf("reclaim request %q: no eviction manager: %w", id, errdefs.ErrNotFound))
	}
	report := eviction.ReclaimReport{ImageBytesFreed: req.Msg.GetImageBytesFreed()}
	if msg := req.Msg.GetError(); msg != "" {
		report.Err = errors.New(msg)
	}
	if err := s.evictions.ReportReclaim(ctx, id, report); err != nil {
		return nil, toConnectError(err)
	}
	return connect.NewResponse(&admissionv1.ReportReclaimResponse{}), nil
}
