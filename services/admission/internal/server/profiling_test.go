package server

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"connectrpc.com/connect"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
	"github.com/splitlet/splitlet/services/admission/internal/admitter"
	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
)

// TestProfiling serves the handler Run serves, with and without
// Options.Profiling, over the h2c server Run uses, and checks the pprof
// routes beside /metrics.
func TestProfiling(t *testing.T) {
	// pprof.Cmdline answers with this process's arguments, NUL-separated.
	cmdline := strings.Join(os.Args, "\x00")
	tests := []struct {
		desc      string
		profiling bool
		method    string // GET when empty
		path      string
		want      int
		wantBody  string // a substring of the body, when set
		wantExact bool   // the body must equal wantBody
	}{
		{desc: "off: index", path: "/debug/pprof/", want: http.StatusNotFound},
		{desc: "off: cmdline", path: "/debug/pprof/cmdline", want: http.StatusNotFound},
		{desc: "off: named profile", path: "/debug/pprof/heap", want: http.StatusNotFound},
		{desc: "off: metrics served", path: "/metrics", want: http.StatusOK, wantBody: "go_goroutines"},
		{desc: "on: index lists the named profiles", profiling: true, path: "/debug/pprof/", want: http.StatusOK, wantBody: "goroutine"},
		{desc: "on: cmdline is the command line", profiling: true, path: "/debug/pprof/cmdline", want: http.StatusOK, wantBody: cmdline, wantExact: true},
		{desc: "on: a named profile through the index", profiling: true, path: "/debug/pprof/goroutine?debug=1", want: http.StatusOK, wantBody: "goroutine profile: total"},
		{desc: "on: symbol lookup", profiling: true, path: "/debug/pprof/symbol", want: http.StatusOK, wantBody: "num_symbols"},
		{desc: "on: unknown profile", profiling: true, path: "/debug/pprof/nosuch", want: http.StatusNotFound, wantBody: "Unknown profile"},
		{desc: "on: GET only, as the kubelet", profiling: true, method: http.MethodPost, path: "/debug/pprof/symbol", want: http.StatusMethodNotAllowed},
		{desc: "on: metrics still served", profiling: true, path: "/metrics", want: http.StatusOK, wantBody: "go_goroutines"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			httpClient, url := startServer(t, newProfilingService(t, tc.profiling))
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req, err := http.NewRequest(method, url+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := httpClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.want {
				t.Fatalf("%s %s = %d, want %d (%.200q)", method, tc.path, resp.StatusCode, tc.want, body)
			}
			if tc.wantExact && string(body) != tc.wantBody {
				t.Fatalf("%s %s body %q, want %q", method, tc.path, body, tc.wantBody)
			}
			if !strings.Contains(string(body), tc.wantBody) {
				t.Fatalf("%s %s body lacks %q: %.200q", method, tc.path, tc.wantBody, body)
			}
		})
	}
}

// TestProfilingKeepsRPCs checks that the pprof routes, which are
// method-qualified patterns, leave AdmissionService's routes on the same mux
// answering.
func TestProfilingKeepsRPCs(t *testing.T) {
	httpClient, url := startServer(t, newProfilingService(t, true))
	client := admissionv1connect.NewAdmissionServiceClient(httpClient, url, connect.WithGRPC())
	resp, err := client.Admit(context.Background(), connect.NewRequest(&admissionv1.AdmitRequest{
		Pod: marshal(t, testfixture.Pod("web", "100m", "64Mi"))[0],
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Msg.Admit {
		t.Errorf("Admit = reject %q (%s), want admit", resp.Msg.Reason, resp.Msg.Message)
	}
}

func newProfilingService(t *testing.T, profiling bool) *Service {
	t.Helper()
	a, err := admitter.New(admitter.Options{Node: testfixture.Node()})
	if err != nil {
		t.Fatal(err)
	}
	return NewService(Options{Admitter: a, Profiling: profiling})
}
