package server

import (
	"net/http"
	"net/http/pprof"
)

// addProfiling serves Go's pprof handlers under /debug/pprof/ on mux, as
// the kubelet's InstallProfilingHandler does when enableProfilingHandler is
// set: the index (which also serves the named profiles: heap, goroutine,
// allocs, ...), cmdline, a CPU profile, symbol lookup and an execution
// trace, for GET only (the kubelet filters its profiling routes to GET too).
// Importing net/http/pprof also registers them on http.DefaultServeMux,
// which the gateway never serves.
func addProfiling(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
