package opsmux

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestAdd(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "opsmux_test_total", Help: "a test counter"}))
	var serving atomic.Bool
	serving.Store(true)
	for _, tc := range []struct {
		desc      string
		profiling bool
		stopping  bool
		method    string
		path      string
		want      int
		body      string
	}{
		{desc: "metrics", method: "GET", path: "/metrics", want: 200, body: "opsmux_test_total 0"},
		{desc: "healthy", method: "GET", path: "/healthz", want: 200, body: "ok"},
		{desc: "shutting down", stopping: true, method: "GET", path: "/healthz", want: 503},
		{desc: "no profiling: no pprof", method: "GET", path: "/debug/pprof/", want: 404},
		{desc: "profiling: pprof index", profiling: true, method: "GET", path: "/debug/pprof/", want: 200, body: "goroutine"},
		{desc: "profiling: GET only", profiling: true, method: "POST", path: "/debug/pprof/", want: 405},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			serving.Store(!tc.stopping)
			mux := http.NewServeMux()
			Add(mux, reg, serving.Load, tc.profiling)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("%s %s = %d %q, want %d with %q", tc.method, tc.path, rec.Code, rec.Body.String(), tc.want, tc.body)
			}
		})
	}
}
