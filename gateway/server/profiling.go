package server

import (
	"net/http"
	_ "net/http/pprof" // registers the handlers on http.DefaultServeMux
)

// addProfiling serves Go's pprof handlers under /debug/pprof/ on mux, as
// the kubelet's InstallProfilingHandler does when enableProfilingHandler is
// set: the index (which also serves the named profiles: heap, goroutine,
// allocs, ...), cmdline, a CPU profile, symbol lookup and an execution
// trace, for GET only (the kubelet filters its profiling routes to GET too).
// Importing net/http/pprof also registers them on http.DefaultServeMux,
// which the gateway never serves.
func addProfiling(mux *http.ServeMux) {
	mux.Handle("GET /debug/pprof/", http.DefaultServeMux)
}
