package nodeapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// fakeSummary serves a fixed Summary and records which call was made.
type fakeSummary struct {
	mu    sync.Mutex
	calls []string
	err   error
}

// statsTime is when every figure of fakeSummary was sampled.
var statsTime = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

func ptr(v uint64) *uint64 { return &v }

func (f *fakeSummary) summary(onlyCPUAndMemory bool) *statsapi.Summary {
	at := metav1.NewTime(statsTime)
	s := &statsapi.Summary{
		Node: statsapi.NodeStats{
			NodeName:  testNode,
			StartTime: metav1.NewTime(statsTime.Add(-time.Hour)),
			CPU:       &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: ptr(12_500_000_000), UsageNanoCores: ptr(300_000_000)},
			Memory:    &statsapi.MemoryStats{Time: at, WorkingSetBytes: ptr(2_000_000_000)},
		},
		Pods: []statsapi.PodStats{{
			PodRef:    statsapi.PodReference{Name: "web", Namespace: "default", UID: "uid-web"},
			StartTime: metav1.NewTime(statsTime.Add(-time.Hour)),
			Containers: []statsapi.ContainerStats{
				{Name: "app", StartTime: metav1.NewTime(statsTime.Add(-30 * time.Minute)),
					CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: ptr(2_000_000_000), UsageNanoCores: ptr(500_000_000)},
					Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: ptr(20 << 20)}},
				// No start time, no memory: neither metric is written.
				{Name: "side", CPU: &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: ptr(250_000_000)}},
			},
			CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: ptr(2_250_000_000)},
			Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: ptr(21 << 20)},
		}},
	}
	if !onlyCPUAndMemory {
		s.Node.Fs = &statsapi.FsStats{Time: at, CapacityBytes: ptr(100 << 30)}
	}
	return s
}

func (f *fakeSummary) Get(_ context.Context, updateStats bool) (*statsapi.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, map[bool]string{true: "Get(update)", false: "Get"}[updateStats])
	if f.err != nil {
		return nil, f.err
	}
	return f.summary(false), nil
}

func (f *fakeSummary) GetCPUAndMemoryStats(context.Context) (*statsapi.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "GetCPUAndMemoryStats")
	if f.err != nil {
		return nil, f.err
	}
	return f.summary(true), nil
}

func (f *fakeSummary) lastCall() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return ""
	}
	return f.calls[len(f.calls)-1]
}

var _ SummaryProvider = (*fakeSummary)(nil)

func statsServer(t *testing.T, summary SummaryProvider) *Server {
	t.Helper()
	f := newFixture(t, admin)
	return New(Options{NodeName: testNode, Pods: fakePods{}, Runtime: f.rt, Metrics: f.metrics, Stats: summary, Auth: admin})
}

func TestStatsSummary(t *testing.T) {
	fake := &fakeSummary{}
	srv := statsServer(t, fake)
	for _, tc := range []struct {
		desc     string
		method   string
		path     string
		body     string
		wantCall string
		wantFs   bool
	}{
		{desc: "GET: the whole summary from cached stats", method: "GET", path: "/stats/summary", wantCall: "Get", wantFs: true},
		{desc: "only_cpu_and_memory=true", method: "GET", path: "/stats/summary?only_cpu_and_memory=true", wantCall: "GetCPUAndMemoryStats"},
		{desc: "only_cpu_and_memory=false is the whole summary", method: "GET", path: "/stats/summary?only_cpu_and_memory=false", wantCall: "Get", wantFs: true},
		{desc: "only_cpu_and_memory twice is the whole summary, as on a kubelet", method: "GET", path: "/stats/summary?only_cpu_and_memory=true&only_cpu_and_memory=true", wantCall: "Get", wantFs: true},
		{desc: "POST with the parameter in the form", method: "POST", path: "/stats/summary", body: "only_cpu_and_memory=true", wantCall: "GetCPUAndMemoryStats"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			req.Header.Set("Authorization", "Bearer admin")
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, req)
			if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("%s %s: %d %s %q", tc.method, tc.path, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			if got := fake.lastCall(); got != tc.wantCall {
				t.Errorf("called %s, want %s", got, tc.wantCall)
			}
			var s statsapi.Summary
			if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
				t.Fatal(err)
			}
			if s.Node.NodeName != testNode || len(s.Pods) != 1 || *s.Pods[0].Containers[0].CPU.UsageNanoCores != 500_000_000 || (s.Node.Fs != nil) != tc.wantFs {
				t.Errorf("summary %s", rec.Body)
			}
			// The kubelet's field names.
			for _, field := range []string{`"nodeName":"node-1"`, `"podRef":{"name":"web","namespace":"default","uid":"uid-web"}`,
				`"usageNanoCores":500000000`, `"usageCoreNanoSeconds":2000000000`, `"workingSetBytes":20971520`} {
				if !strings.Contains(rec.Body.String(), field) {
					t.Errorf("no %s in %s", field, rec.Body)
				}
			}
		})
	}

	broken := statsServer(t, &fakeSummary{err: errors.New("failed to get root cgroup stats: no cgroupfs")})
	if code, body := get(t, broken, "/stats/summary", "admin"); code != 500 || body != "Internal Error: failed to get root cgroup stats: no cgroupfs\n" {
		t.Errorf("a summary that cannot be built: %d %q, want 500 with the kubelet's Internal Error", code, body)
	}
	if code, _ := get(t, statsServer(t, nil), "/stats/summary", "admin"); code != 404 {
		t.Errorf("without a stats provider: %d, want 404", code)
	}
}

func TestResourceMetrics(t *testing.T) {
	fake := &fakeSummary{}
	srv := statsServer(t, fake)
	code, body := get(t, srv, "/metrics/resource", "admin")
	if code != 200 {
		t.Fatalf("/metrics/resource: %d %q", code, body)
	}
	if got := fake.lastCall(); got != "GetCPUAndMemoryStats" {
		t.Errorf("called %s, want GetCPUAndMemoryStats (the kubelet's collector)", got)
	}
	// Samples are stamped with their time in milliseconds; start times
	// are not stamped.
	const ms = " 1795770000000"
	want := `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 2` + ms + `
container_cpu_usage_seconds_total{container="side",namespace="default",pod="web"} 0.25` + ms + `
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 2.097152e+07` + ms + `
# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="app",namespace="default",pod="web"} 1.7957682e+09
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 12.5` + ms + `
# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 2e+09` + ms + `
# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="default",pod="web"} 2.25` + ms + `
# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="default",pod="web"} 2.2020096e+07` + ms + `
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
`
	if body != want {
		t.Errorf("/metrics/resource:\n%s\nwant:\n%s", body, want)
	}

	broken := statsServer(t, &fakeSummary{err: errors.New("runtime down")})
	want = `# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 1
`
	if code, body := get(t, broken, "/metrics/resource", "admin"); code != 200 || body != want {
		t.Errorf("/metrics/resource when stats fail: %d\n%s\nwant 200 and\n%s", code, body, want)
	}
}

// TestStatsAuth: /stats/ needs nodes/stats and /metrics/resource
// nodes/metrics, as on a kubelet; neither is opened by nodes/proxy.
func TestStatsAuth(t *testing.T) {
	srv := statsServer(t, &fakeSummary{})
	for _, tc := range []struct {
		desc, path, token string
		want              int
		wantBody          string
	}{
		{desc: "nodes/stats opens /stats/summary", path: "/stats/summary", token: "stats", want: 200},
		{desc: "nodes/metrics does not open /stats/summary", path: "/stats/summary", token: "scrape", want: 403,
			wantBody: "subresource(s)=[stats]"},
		{desc: "nodes/metrics opens /metrics/resource", path: "/metrics/resource", token: "scrape", want: 200},
		{desc: "nodes/stats does not open /metrics/resource", path: "/metrics/resource", token: "stats", want: 403,
			wantBody: "subresource(s)=[metrics]"},
		{desc: "nodes/proxy opens neither", path: "/stats/summary", token: "proxy", want: 403},
		{desc: "no credentials: 401", path: "/metrics/resource", want: 401},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			code, body := get(t, srv, tc.path, tc.token)
			if code != tc.want || !strings.Contains(body, tc.wantBody) {
				t.Fatalf("GET %s as %q: %d %q, want %d with %q", tc.path, tc.token, code, body, tc.want, tc.wantBody)
			}
		})
	}
}
