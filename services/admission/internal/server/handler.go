package server

import (
	"net/http"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
)

// Handler returns the HTTP handler serving AdmissionService (gRPC, gRPC-Web
// and Connect), grpc.health.v1.Health and /metrics. Serve it over h2c so gRPC
// clients can use plain TCP.
func (s *Service) Handler(opts ...connect.HandlerOption) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(admissionv1connect.NewAdmissionServiceHandler(s, opts...))
	mux.Handle(grpchealth.NewHandler(s.health, opts...))
	mux.Handle("/metrics", s.metrics.handler())
	return mux
}
