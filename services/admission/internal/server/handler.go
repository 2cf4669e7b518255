package server

import (
	"net/http"

	"github.com/splitlet/splitlet/internal/opsmux"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
)

// compressMinBytes leaves small messages uncompressed whatever the client
// accepts: an AdmitResponse is a few dozen bytes, and resetting a gzip
// writer for it cost more than the rest of a steady Admit's own work.
const compressMinBytes = 1024

// Handler returns the HTTP handler serving AdmissionService (gRPC, gRPC-Web
// and Connect), grpc.health.v1.Health, /metrics, /healthz and, with
// Options.Profiling, /debug/pprof/ (opsmux). Serve it over h2c so gRPC
// clients can use plain TCP. opts come after the service's defaults
// (compressMinBytes), so they may override them.
func (s *Service) Handler(opts ...connect.HandlerOption) http.Handler {
	opts = append([]connect.HandlerOption{connect.WithCompressMinBytes(compressMinBytes)}, opts...)
	mux := http.NewServeMux()
	path, h := admissionv1connect.NewAdmissionServiceHandler(s, opts...)
	if s.guard != nil {
		h = s.guard(h)
	}
	mux.Handle(path, h)
	mux.Handle(grpchealth.NewHandler(s.health, opts...))
	opsmux.Add(mux, s.metrics.registry, nil, s.profiling)
	return mux
}
