package harness

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestCtrConfigs(t *testing.T) {
	p := directPod{Name: "ctr-d-c1-00", UID: "0f1e2d3c-0000-4000-8000-000000000001", Image: "docker.io/library/busybox:1.36",
		LogsRoot: "/logs", PodsDir: "/state/pods", TermFile: "abcd1234",
		DNS: &runtimeapi.DNSConfig{Servers: []string{"10.0.0.1"}}, Seen: time.Unix(0, 0)}
	for _, tc := range []struct {
		desc         string
		hostNetwork  bool
		wantNetwork  runtimeapi.NamespaceMode
		wantHostname string
	}{
		{desc: "host network: node namespace, no hostname", hostNetwork: true, wantNetwork: runtimeapi.NamespaceMode_NODE},
		{desc: "pod network: pod namespace, hostname is the pod name", wantNetwork: runtimeapi.NamespaceMode_POD, wantHostname: "ctr-d-c1-00"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p := p
			p.HostNetwork = tc.hostNetwork
			sb := sandboxConfig(p)
			if got := sb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork(); got != tc.wantNetwork {
				t.Errorf("sandbox network = %v, want %v", got, tc.wantNetwork)
			}
			if sb.GetHostname() != tc.wantHostname {
				t.Errorf("hostname = %q, want %q", sb.GetHostname(), tc.wantHostname)
			}
			wantLogDir := "/logs/default_ctr-d-c1-00_" + p.UID
			if sb.GetLogDirectory() != wantLogDir {
				t.Errorf("log directory = %q, want %q", sb.GetLogDirectory(), wantLogDir)
			}
			if got := sb.GetLinux().GetCgroupParent(); got != "/kubepods/besteffort/pod"+p.UID {
				t.Errorf("cgroup parent = %q", got)
			}
			// sync's relist and the bench's cleanup find pods by these.
			for k, v := range map[string]string{"app": "bench", "io.kubernetes.pod.name": p.Name,
				"io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": p.UID} {
				if sb.GetLabels()[k] != v {
					t.Errorf("sandbox label %s = %q, want %q", k, sb.GetLabels()[k], v)
				}
			}
			if sb.GetAnnotations()["splitlet.dev/managed-by"] != "splitlet-sync" {
				t.Errorf("sandbox annotations %v lack sync's managed-by mark", sb.GetAnnotations())
			}

			c := containerConfig(p, "sha256:feed")
			if c.GetImage().GetImage() != "sha256:feed" || c.GetImage().GetUserSpecifiedImage() != p.Image {
				t.Errorf("image = %v", c.GetImage())
			}
			if !reflect.DeepEqual(c.GetCommand(), []string{"sleep", "3600"}) {
				t.Errorf("command = %v", c.GetCommand())
			}
			if c.GetLogPath() != "sleep/0.log" {
				t.Errorf("log path = %q", c.GetLogPath())
			}
			wantMount := filepath.Join("/state/pods", p.UID, "containers", "sleep", "abcd1234")
			if m := c.GetMounts(); len(m) != 1 || m[0].GetHostPath() != wantMount || m[0].GetContainerPath() != "/dev/termination-log" {
				t.Errorf("mounts = %v, want %s at /dev/termination-log", m, wantMount)
			}
			if got := c.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork(); got != tc.wantNetwork {
				t.Errorf("container network = %v, want %v", got, tc.wantNetwork)
			}
			if c.GetLinux().GetResources().GetOomScoreAdj() != 1000 {
				t.Errorf("BestEffort oom_score_adj = %d, want 1000", c.GetLinux().GetResources().GetOomScoreAdj())
			}
			if c.GetLabels()["io.kubernetes.pod.name"] != p.Name || c.GetLabels()["io.kubernetes.container.name"] != "sleep" {
				t.Errorf("container labels = %v", c.GetLabels())
			}
			if c.GetAnnotations()["io.kubernetes.pod.terminationGracePeriod"] != "1" {
				t.Errorf("grace period annotation = %q, want the manifest's 1", c.GetAnnotations()["io.kubernetes.pod.terminationGracePeriod"])
			}
		})
	}
}

// TestCtrPodManifest checks that the manifest splitlet gets says what the
// direct side's configs assume.
func TestCtrPodManifest(t *testing.T) {
	for _, hostNetwork := range []bool{true, false} {
		var pod struct {
			Metadata struct {
				Name, Namespace string
				Labels          map[string]string
			}
			Spec struct {
				HostNetwork                   bool  `json:"hostNetwork"`
				TerminationGracePeriodSeconds int64 `json:"terminationGracePeriodSeconds"`
				Containers                    []struct {
					Name, Image, ImagePullPolicy string
					Command                      []string
				}
			}
		}
		if err := json.Unmarshal([]byte(ctrPodManifest("p", "img:1", hostNetwork)), &pod); err != nil {
			t.Fatal(err)
		}
		s := pod.Spec
		if pod.Metadata.Name != "p" || pod.Metadata.Namespace != ctrNamespace || pod.Metadata.Labels["app"] != "bench" ||
			s.HostNetwork != hostNetwork || s.TerminationGracePeriodSeconds != ctrGraceSeconds || len(s.Containers) != 1 {
			t.Fatalf("hostNetwork %t: manifest = %+v", hostNetwork, pod)
		}
		c := s.Containers[0]
		if c.Name != ctrContainerName || c.Image != "img:1" || c.ImagePullPolicy != "IfNotPresent" || !reflect.DeepEqual(c.Command, ctrCommand) {
			t.Errorf("container = %+v", c)
		}
	}
}

func TestParseResolvConf(t *testing.T) {
	for _, tc := range []struct {
		desc string
		in   string
		want *runtimeapi.DNSConfig
	}{
		{desc: "servers, search, options, comments", in: "# c\nnameserver 10.0.0.1\nnameserver 10.0.0.2 ; x\nsearch a.example. b.example .\noptions ndots:2 edns0\n",
			want: &runtimeapi.DNSConfig{Servers: []string{"10.0.0.1", "10.0.0.2"}, Searches: []string{"a.example", "b.example"}, Options: []string{"ndots:2", "edns0"}}},
		{desc: "last search line wins", in: "search one\nsearch two\n", want: &runtimeapi.DNSConfig{Searches: []string{"two"}}},
		{desc: "empty", in: "", want: &runtimeapi.DNSConfig{}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := parseResolvConf(tc.in)
			if !reflect.DeepEqual(got.Servers, tc.want.Servers) || !reflect.DeepEqual(got.Searches, tc.want.Searches) ||
				!reflect.DeepEqual(got.Options, tc.want.Options) {
				t.Errorf("parseResolvConf = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseGatewayOpsAndDiff(t *testing.T) {
	before := parseGatewayOps(`# HELP splitlet_gateway_runtime_operations_duration_seconds x
# TYPE splitlet_gateway_runtime_operations_duration_seconds histogram
splitlet_gateway_runtime_operations_duration_seconds_bucket{operation_type="RunPodSandbox",le="0.1"} 1
splitlet_gateway_runtime_operations_duration_seconds_sum{operation_type="RunPodSandbox"} 0.2
splitlet_gateway_runtime_operations_duration_seconds_count{operation_type="RunPodSandbox"} 1
splitlet_gateway_runtime_operations_duration_seconds_sum{operation_type="Version"} 0.001
splitlet_gateway_runtime_operations_duration_seconds_count{operation_type="Version"} 1
splitlet_gateway_runtime_operations_total{code="OK",operation_type="RunPodSandbox"} 1
`)
	if got := before["RunPodSandbox"]; got.Count != 1 || got.Sum != 0.2 {
		t.Fatalf("parsed RunPodSandbox = %+v, want count 1 sum 0.2", got)
	}
	if len(before) != 2 {
		t.Errorf("parsed %d methods (%v), want 2: the counter must not be read as the histogram", len(before), before)
	}
	after := parseGatewayOps(`splitlet_gateway_runtime_operations_duration_seconds_sum{operation_type="RunPodSandbox"} 1.4
splitlet_gateway_runtime_operations_duration_seconds_count{operation_type="RunPodSandbox"} 5
splitlet_gateway_runtime_operations_duration_seconds_sum{operation_type="Version"} 0.001
splitlet_gateway_runtime_operations_duration_seconds_count{operation_type="Version"} 1
splitlet_gateway_runtime_operations_duration_seconds_sum{operation_type="ListContainers"} 0.003
splitlet_gateway_runtime_operations_duration_seconds_count{operation_type="ListContainers"} 3
`)
	want := map[string]RPCStat{
		"RunPodSandbox":  {Count: 4, MeanMS: 300}, // (1.4-0.2)/4 s
		"ListContainers": {Count: 3, MeanMS: 1},
	}
	if got := diffOps(before, after); !maps.Equal(got, want) {
		t.Errorf("diffOps = %v, want %v (Version, not called in between, left out)", got, want)
	}
}

func TestCompare(t *testing.T) {
	run := func(side, mode string, rsP50, runP50, wall float64, errs ...string) SideRun {
		return SideRun{Side: side, Mode: mode, Errors: errs,
			RuntimeStart: Summary{Count: 20, P50: rsP50, Max: 2 * rsP50}, WallRuntimeStart: wall,
			Running: Summary{Count: 20, P50: runP50, Max: 2 * runP50}, WallRunning: wall + 1}
	}
	runs := []SideRun{
		run(SideDirect, ModeConcurrent, 100, 110, 1),
		run(SideDirect, ModeConcurrent, 300, 310, 3),
		run(SideDirect, ModeConcurrent, 200, 210, 2),
		run(SideSplitlet, ModeConcurrent, 220, 400, 2.2),
		run(SideSplitlet, ModeConcurrent, 9999, 9999, 99, "failed"), // left out
		run(SideDirect, ModeSequential, 1, 1, 1),                    // other mode
	}
	for _, tc := range []struct {
		desc   string
		metric string
		want   Comparison
	}{
		{desc: "runtime start: medians, errors left out", metric: MetricRuntimeStart, want: Comparison{
			Mode: ModeConcurrent, Metric: MetricRuntimeStart, Rounds: 1,
			Direct:   Figures{P50MS: 200, MaxMS: 400, WallSeconds: 2},
			Splitlet: Figures{P50MS: 220, MaxMS: 440, WallSeconds: 2.2},
			Ratio:    Figures{P50MS: 1.1, MaxMS: 1.1, WallSeconds: 1.1},
		}},
		{desc: "running uses the running figures", metric: MetricRunning, want: Comparison{
			Mode: ModeConcurrent, Metric: MetricRunning, Rounds: 1,
			Direct:   Figures{P50MS: 210, MaxMS: 420, WallSeconds: 3},
			Splitlet: Figures{P50MS: 400, MaxMS: 800, WallSeconds: 3.2},
			Ratio:    Figures{P50MS: 1.905, MaxMS: 1.905, WallSeconds: 1.067},
		}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := compare(runs, ModeConcurrent, tc.metric); got != tc.want {
				t.Errorf("compare = %+v\nwant      %+v", got, tc.want)
			}
		})
	}
}

func TestMedianAndRatio(t *testing.T) {
	for _, tc := range []struct {
		desc string
		in   []float64
		want float64
	}{
		{desc: "odd count, unsorted", in: []float64{3, 1, 2}, want: 2},
		{desc: "even count averages the middle two", in: []float64{4, 1, 3, 2}, want: 2.5},
		{desc: "none", want: 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := median(tc.in); got != tc.want {
				t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
	if got := ratio(1, 0); got != 0 {
		t.Errorf("ratio over zero = %v, want 0", got)
	}
	if got := ratio(2, 3); got != 0.667 {
		t.Errorf("ratio(2,3) = %v, want 0.667", got)
	}
}

func TestPerPodAndWall(t *testing.T) {
	t0 := time.Unix(100, 0)
	starts := map[string]time.Time{"a": t0, "b": t0.Add(time.Second), "c": t0}
	ends := map[string]time.Time{"a": t0.Add(500 * time.Millisecond), "b": t0.Add(3 * time.Second)}
	ds, missing := perPod([]string{"a", "b", "c"}, starts, ends)
	if missing != 1 || !reflect.DeepEqual(ds, []time.Duration{500 * time.Millisecond, 2 * time.Second}) {
		t.Errorf("perPod = %v, %d missing; want [500ms 2s], 1", ds, missing)
	}
	if got := wallSeconds([]string{"a", "b", "c"}, starts, ends); got != 3 {
		t.Errorf("wall = %v s, want 3 (first start to last end)", got)
	}
	if got := wallSeconds([]string{"c"}, starts, ends); got != 0 {
		t.Errorf("wall with no end = %v, want 0", got)
	}
}

func TestRPCTimer(t *testing.T) {
	tm := newRPCTimer()
	for range 3 {
		_ = tm.time("A", func() error { return nil })
	}
	if s := tm.stats()["A"]; s.Count != 3 {
		t.Errorf("A counted %d times, want 3", s.Count)
	}
	if _, ok := tm.stats()["B"]; ok {
		t.Error("B reported though never called")
	}
}
