package nodeapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecSync answers "echo ..." with its words on stdout and "fail" with
// exit code 3 and a line on stderr, and records the request.
func (f *fakeRuntime) ExecSync(_ context.Context, in *runtimeapi.ExecSyncRequest, _ ...grpc.CallOption) (*runtimeapi.ExecSyncResponse, error) {
	f.mu.Lock()
	f.requests = append(f.requests, proto.Clone(in))
	f.mu.Unlock()
	switch in.GetCmd()[0] {
	case "echo":
		return &runtimeapi.ExecSyncResponse{Stdout: []byte(strings.Join(in.GetCmd()[1:], " ") + "\n"), Stderr: []byte("warn\n")}, nil
	default:
		return &runtimeapi.ExecSyncResponse{ExitCode: 3, Stderr: []byte("no such command\n")}, nil
	}
}

func post(t *testing.T, h http.Handler, path, token string) (int, string, http.Header) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String(), rec.Header()
}

// /run runs cmd (split on spaces) in the running container and answers
// stdout then stderr; the kubelet's getRun. It needs nodes/proxy.
func TestRun(t *testing.T) {
	f := newFixture(t, admin)
	code, body, h := post(t, f.srv, "/run/default/web/app?cmd=echo+hello+node", "proxy")
	if code != 200 || body != "hello node\nwarn\n" || h.Get("Content-Type") != "application/json" {
		t.Errorf("/run echo: %d %q %q, want 200 with stdout then stderr", code, body, h.Get("Content-Type"))
	}
	var execs []*runtimeapi.ExecSyncRequest
	for _, r := range f.rt.takeRequests() {
		if e, ok := r.(*runtimeapi.ExecSyncRequest); ok {
			execs = append(execs, e)
		}
	}
	if len(execs) != 1 || execs[0].GetContainerId() != "cur" || !slices.Equal(execs[0].GetCmd(), []string{"echo", "hello", "node"}) || execs[0].GetTimeout() != 0 {
		t.Errorf("ExecSync requests %v, want one in the running container cur, no timeout", execs)
	}
	if code, body, _ := post(t, f.srv, "/run/default/web/uid-web/app?cmd=fail", "proxy"); code != 500 || !strings.Contains(body, "command 'fail' exited with 3: no such command") {
		t.Errorf("/run of a failing command: %d %q, want 500 with its exit code and stderr", code, body)
	}
	for _, tc := range []struct{ path, token string }{
		{"/run/default/web/app?cmd=echo", "logs"},            // no nodes/proxy
		{"/run/default/missing/app?cmd=echo", "proxy"},       // no such pod
		{"/run/default/web/other-uid/app?cmd=echo", "proxy"}, // UID mismatch
		{"/run/default/web/side?cmd=echo", "proxy"},          // not running
	} {
		if code, body, _ := post(t, f.srv, tc.path, tc.token); code == 200 {
			t.Errorf("POST %s as %s: %d %q, want refused", tc.path, tc.token, code, body)
		}
	}
}

// /metrics/probes serves the prober's registry, authorized as nodes/metrics.
func TestProbeMetrics(t *testing.T) {
	f := newFixture(t, admin)
	probes := prometheus.NewRegistry()
	probes.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "prober_test_total", Help: "a test counter"}))
	srv := New(Options{NodeName: testNode, Pods: fakePods{}, Runtime: f.rt, Metrics: f.metrics, ProbeMetrics: probes, Auth: admin})
	if code, body := get(t, srv, "/metrics/probes", "scrape"); code != 200 || !strings.Contains(body, "prober_test_total 0") || strings.Contains(body, "kubelet_test_total") {
		t.Errorf("/metrics/probes: %d %q, want the prober's registry only", code, body)
	}
	if code, _ := get(t, srv, "/metrics/probes", "logs"); code != http.StatusForbidden {
		t.Errorf("/metrics/probes without nodes/metrics: %d, want 403", code)
	}
	if code, _ := get(t, f.srv, "/metrics/probes", "scrape"); code != http.StatusNotFound {
		t.Errorf("/metrics/probes without a prober registry: %d, want 404", code)
	}
}
