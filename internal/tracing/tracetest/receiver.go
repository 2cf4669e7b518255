// Package tracetest is an in-process OTLP/gRPC trace receiver for tests:
// it keeps every span the processes under test export, with the service
// name of the resource it came with, and answers questions a test asks of a
// trace (one trace ID? every parent present?).
//
//	r, err := tracetest.Start()
//	defer r.Stop()
//	// run a process with --tracing-endpoint=r.Addr()
//	spans := r.Spans()
package tracetest

import (
	"context"
	"encoding/hex"
	"net"
	"sync"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// Span is one received span, flattened.
type Span struct {
	Service  string // the resource's service.name
	Name     string
	TraceID  string // hex
	SpanID   string // hex
	ParentID string // hex; "" for a root span
	Attrs    map[string]string
}

// Receiver is an OTLP/gRPC TraceService keeping what it receives.
type Receiver struct {
	collectortrace.UnimplementedTraceServiceServer

	ln  net.Listener
	srv *grpc.Server

	discard bool // count spans, keep none (StartDiscarding)

	mu    sync.Mutex
	spans []Span
	count int
	added chan struct{} // closed and replaced on each Export
}

var _ collectortrace.TraceServiceServer = (*Receiver)(nil)

// Start serves a receiver on a free loopback port.
func Start() (*Receiver, error) { return start(false) }

// StartDiscarding serves a receiver that counts the spans and keeps none:
// a sink for benchmarks with tracing on.
func StartDiscarding() (*Receiver, error) { return start(true) }

func start(discard bool) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{ln: ln, srv: grpc.NewServer(), added: make(chan struct{}), discard: discard}
	collectortrace.RegisterTraceServiceServer(r.srv, r)
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Addr is the receiver's host:port, for --tracing-endpoint.
func (r *Receiver) Addr() string { return r.ln.Addr().String() }

// Stop stops the server.
func (r *Receiver) Stop() { r.srv.Stop() }

// Export implements TraceServiceServer.
func (r *Receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	if r.discard {
		n := 0
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				n += len(ss.GetSpans())
			}
		}
		r.mu.Lock()
		r.count += n
		r.mu.Unlock()
		return &collectortrace.ExportTraceServiceResponse{}, nil
	}
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{Service: service, Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()),
					SpanID: hex.EncodeToString(s.GetSpanId()), Attrs: map[string]string{}}
				if len(s.GetParentSpanId()) > 0 {
					sp.ParentID = hex.EncodeToString(s.GetParentSpanId())
				}
				for _, kv := range s.GetAttributes() {
					sp.Attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.count += len(got)
	close(r.added)
	r.added = make(chan struct{})
	r.mu.Unlock()
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// Count is how many spans were received.
func (r *Receiver) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// Spans returns a copy of every span received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// WaitFor returns the spans received once ok says they are enough, or
// what was received when ctx ends, with ctx's error.
func (r *Receiver) WaitFor(ctx context.Context, ok func([]Span) bool) ([]Span, error) {
	for {
		r.mu.Lock()
		spans := append([]Span(nil), r.spans...)
		added := r.added
		r.mu.Unlock()
		if ok(spans) {
			return spans, nil
		}
		select {
		case <-added:
		case <-ctx.Done():
			return spans, ctx.Err()
		}
	}
}

// Trace returns the spans of one trace.
func Trace(spans []Span, traceID string) []Span {
	var out []Span
	for _, s := range spans {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	return out
}

// MissingParents returns the spans whose parent is not among spans: empty
// for a connected trace with its root.
func MissingParents(spans []Span) []Span {
	ids := make(map[string]bool, len(spans))
	for _, s := range spans {
		ids[s.SpanID] = true
	}
	var out []Span
	for _, s := range spans {
		if s.ParentID != "" && !ids[s.ParentID] {
			out = append(out, s)
		}
	}
	return out
}
