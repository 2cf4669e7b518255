package daemon

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestAddOpsProfiling(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		profiling bool
		path      string
		want      int
	}{
		{desc: "metrics always served", path: "/metrics", want: http.StatusOK},
		{desc: "healthz always served", path: "/healthz", want: http.StatusOK},
		{desc: "pprof off by default", path: "/debug/pprof/cmdline", want: http.StatusNotFound},
		{desc: "pprof cmdline with --profiling", profiling: true, path: "/debug/pprof/cmdline", want: http.StatusOK},
		{desc: "pprof index with --profiling", profiling: true, path: "/debug/pprof/", want: http.StatusOK},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			mux := http.NewServeMux()
			addOps(mux, prometheus.NewRegistry(), tc.profiling)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.want {
				t.Fatalf("GET %s: status %d, want %d", tc.path, rec.Code, tc.want)
			}
		})
	}
}

// TestPodCgroups: --cgroup-root= (empty) turns pod cgroup removal off; any
// other root turns it on.
func TestPodCgroups(t *testing.T) {
	for _, tc := range []struct {
		desc string
		root string
		want bool
	}{
		{desc: "empty root disables removal", root: "", want: false},
		{desc: "default root enables removal", root: "/sys/fs/cgroup", want: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := podCgroups(tc.root) != nil; got != tc.want {
				t.Errorf("podCgroups(%q) enabled = %v, want %v", tc.root, got, tc.want)
			}
		})
	}
}
