package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestProfiling(t *testing.T) {
	tests := []struct {
		desc      string
		profiling bool
		method    string
		path      string
		want      int
		wantBody  string // a substring of the body, when set
	}{
		{desc: "off by default: cmdline", path: "/debug/pprof/cmdline", want: http.StatusNotFound},
		{desc: "off by default: index", path: "/debug/pprof/", want: http.StatusNotFound},
		{desc: "on: cmdline names the process", profiling: true, path: "/debug/pprof/cmdline", want: http.StatusOK, wantBody: "server.test"},
		{desc: "on: index lists the profiles", profiling: true, path: "/debug/pprof/", want: http.StatusOK, wantBody: "goroutine"},
		{desc: "on: a named profile", profiling: true, path: "/debug/pprof/goroutine?debug=1", want: http.StatusOK, wantBody: "goroutine profile"},
		{desc: "on: GET only, as the kubelet", profiling: true, method: http.MethodPost, path: "/debug/pprof/symbol", want: http.StatusMethodNotAllowed},
		{desc: "on: metrics still served", profiling: true, path: "/metrics", want: http.StatusOK, wantBody: "go_goroutines"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := start(t, Config{MetricsAddr: "127.0.0.1:0", Profiling: tc.profiling}, newTestRuntime())
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req, err := http.NewRequest(method, "http://"+h.srv.MetricsAddr().String()+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("%s %s = %d, want %d (%.200s)", method, tc.path, resp.StatusCode, tc.want, body)
			}
			if !strings.Contains(string(body), tc.wantBody) {
				t.Fatalf("%s %s body lacks %q: %.200s", method, tc.path, tc.wantBody, body)
			}
		})
	}
}
