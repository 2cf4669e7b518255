package server

import (
	"net/http"
	_ "net/http/pprof" // registers the handlers on http.DefaultServeMux
)

// addProfiling serves Go's pprof handlers under /debug/pprof/ on mux, as the
// kubelet's InstallProfilingHandler does when enableProfilingHandler is set:
// the index, which also serves every named profile (heap, goroutine,
// allocs, block, mutex, threadcreate), the command line, a CPU profile,
// symbol lookup and an execution trace. Only GET is routed, as the kubelet
// filters its pprof web service to GET; other methods get 405.
//
// Unlike the kubelet, which answers 405 on a disabled endpoint, a process
// without profiling simply has no such route (404), as splitlet-sync and
// splitlet-gateway do. Importing net/http/pprof also registers the handlers
// on http.DefaultServeMux, which this process never serves.
func addProfiling(mux *http.ServeMux) {
	mux.Handle("GET /debug/pprof/", http.DefaultServeMux)
}
