package server

import (
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// method is what the observe interceptors need about one RPC, worked out once
// rather than on every call: a zap With clones the logger (and, with a JSON
// core, encodes the field into a new buffer), and a metric label lookup hashes
// the label values and takes the vector's lock.
type method struct {
	op  string      // operation label and logged method, e.g. "RunPodSandbox"
	cri bool        // a CRI call, counted in the runtime operation metrics
	log *zap.Logger // the server's logger naming the method

	// required are the request's fields the validation step checks.
	required requirements

	// ok holds the collectors of the method's successful calls, made on its
	// first success so that /metrics lists only methods that were called,
	// as before the cache existed.
	ok atomic.Pointer[okMetrics]
}

// okMetrics are the collectors one successful call updates.
type okMetrics struct {
	operations prometheus.Counter
	duration   prometheus.Observer
}

// newMethod describes fullMethod ("/runtime.v1.RuntimeService/Version").
func (s *Server) newMethod(fullMethod string) *method {
	op := operation(fullMethod)
	return &method{
		op:  op,
		cri: strings.HasPrefix(fullMethod, criMethodPrefix),
		log: s.log.With(zap.String("method", op)),

		required: requirementsOf(fullMethod),
	}
}

// indexMethods fills s.methods with every method gs serves. It runs in New,
// after registration and before Serve, so the map is read without a lock.
func (s *Server) indexMethods(gs *grpc.Server) {
	s.methods = make(map[string]*method)
	for service, info := range gs.GetServiceInfo() {
		for _, m := range info.Methods {
			full := "/" + service + "/" + m.Name
			s.methods[full] = s.newMethod(full)
		}
	}
}

// method returns the description of fullMethod. A method the server does not
// serve (grpc-go answers those before the interceptors, so this is only
// defensive) is described afresh on each call.
func (s *Server) method(fullMethod string) *method {
	if m, ok := s.methods[fullMethod]; ok {
		return m
	}
	return s.newMethod(fullMethod)
}

// okCollectors returns m's success collectors from reg, creating them on the
// first call. Two first calls racing both look the children up; the vectors
// hand both the same child, so either store is correct.
func (m *method) okCollectors(reg *metrics) *okMetrics {
	if c := m.ok.Load(); c != nil {
		return c
	}
	c := &okMetrics{
		operations: reg.operations.WithLabelValues(m.op, okCode),
		duration:   reg.duration.WithLabelValues(m.op),
	}
	m.ok.Store(c)
	return c
}
