// Package opsmux adds the operational endpoints every splitlet process
// serves beside its API: /metrics, /healthz and, when asked for, Go's pprof
// profiles, the same way in each.
//
//	mux := http.NewServeMux()
//	opsmux.Add(mux, reg, serving.Load, cfg.Profiling)
package opsmux

import (
	"net/http"
	_ "net/http/pprof" // registers the handlers on http.DefaultServeMux

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Add serves reg on /metrics and healthy on /healthz (200 "ok", or 503
// while healthy says false: a process shutting down), and with profiling
// Go's pprof handlers under /debug/pprof/ (AddProfiling). A nil healthy is
// always healthy.
func Add(mux *http.ServeMux, reg prometheus.Gatherer, healthy func() bool, profiling bool) {
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if healthy != nil && !healthy() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	if profiling {
		AddProfiling(mux)
	}
}

// AddProfiling serves Go's pprof handlers under /debug/pprof/ on mux, as the
// kubelet's InstallProfilingHandler does when enableProfilingHandler is set:
// the index (which also serves the named profiles: heap, goroutine, allocs,
// block, mutex, threadcreate), cmdline, a CPU profile, symbol lookup and an
// execution trace, for GET only (the kubelet filters its profiling routes to
// GET too). A process without profiling has no such route (404). Importing
// net/http/pprof also registers the handlers on http.DefaultServeMux, which
// no splitlet process serves.
func AddProfiling(mux *http.ServeMux) {
	mux.Handle("GET /debug/pprof/", http.DefaultServeMux)
}
