package stats

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// fakeRuntime answers the stats RPCs from samples the test sets: the
// cumulative counters it reports are whatever the test says they are at
// that moment.
type fakeRuntime struct {
	mu         sync.Mutex
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	// sandboxStats nil answers ListPodSandboxStats Unimplemented, as a
	// runtime without pod sandbox stats.
	sandboxStats   []*runtimeapi.PodSandboxStats
	containerStats []*runtimeapi.ContainerStats
	imageFs        *runtimeapi.FilesystemUsage
}

func (f *fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.ListPodSandboxResponse{Items: f.sandboxes}, nil
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.ListContainersResponse{Containers: f.containers}, nil
}

func (f *fakeRuntime) ListPodSandboxStats(context.Context, *runtimeapi.ListPodSandboxStatsRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sandboxStats == nil {
		return nil, status.Error(codes.Unimplemented, "ListPodSandboxStats")
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: f.sandboxStats}, nil
}

func (f *fakeRuntime) ListContainerStats(context.Context, *runtimeapi.ListContainerStatsRequest, ...grpc.CallOption) (*runtimeapi.ListContainerStatsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.ListContainerStatsResponse{Stats: f.containerStats}, nil
}

func (f *fakeRuntime) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest, ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error) {
	if f.imageFs == nil {
		return nil, status.Error(codes.Unavailable, "no image fs")
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{f.imageFs}}, nil
}

var (
	_ Runtime      = (*fakeRuntime)(nil)
	_ ImageService = (*fakeRuntime)(nil)
)

var t0 = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// procFiles is a /proc with 8 GiB of memory, booted at t0 - 1h.
func procFiles(t *testing.T) string {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"meminfo":                "MemTotal:        8388608 kB\nMemFree:         2097152 kB\nInactive(file):   1048576 kB\nAnonPages:        524288 kB\n",
		"stat":                   "cpu  100 0 50 1000 7 2 3 5 0 0\ncpu0 100 0 50 1000 7 2 3 5 0 0\nbtime " + itoa(t0.Add(-time.Hour).Unix()) + "\n",
		"loadavg":                "0.10 0.20 0.30 2/345 6789\n",
		"sys/kernel/pid_max":     "4194304\n",
		"sys/kernel/threads-max": "95000\n",
	})
	return dir
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func formatUint(v uint64) string { return strconv.FormatUint(v, 10) }

// cgroupV1 writes a cgroup v1 root and kubepods with the given CPU time.
func cgroupV1(t *testing.T, dir string, cpu uint64) {
	writeFiles(t, dir, map[string]string{
		"cpuacct/cpuacct.usage":                 formatUint(cpu) + "\n",
		"memory/memory.usage_in_bytes":          "3000000000\n",
		"memory/memory.stat":                    "rss 100\ninactive_file 5\ntotal_rss 700000000\ntotal_inactive_file 1000000000\ntotal_pgfault 42\ntotal_pgmajfault 7\n",
		"cpuacct/kubepods/cpuacct.usage":        formatUint(cpu/2) + "\n",
		"memory/kubepods/memory.usage_in_bytes": "500000000\n",
		"memory/kubepods/memory.stat":           "total_rss 300000000\ntotal_inactive_file 100000000\n",
		"memory/kubepods/memory.limit_in_bytes": "9223372036854771712\n",
	})
}

func TestHostCgroup(t *testing.T) {
	proc := procFiles(t)
	for _, tc := range []struct {
		desc  string
		files map[string]string
		name  string
		want  cgroupSample
	}{
		{desc: "v1 root: cpuacct.usage, usage minus total_inactive_file, the machine's memory as limit", name: "/",
			files: map[string]string{
				"cpuacct/cpuacct.usage":        "123456789\n",
				"memory/memory.usage_in_bytes": "3000000000\n",
				"memory/memory.stat":           "total_rss 700000000\ntotal_inactive_file 1000000000\ntotal_pgfault 42\ntotal_pgmajfault 7\n",
			},
			want: cgroupSample{cpuNanoSeconds: 123456789, usageBytes: 3e9, workingSet: 2e9, rssBytes: 7e8, pageFaults: 42, majorFaults: 7, limitBytes: 8 << 30}},
		{desc: "v1 with cpu,cpuacct joined, a limit", name: "/kubepods",
			files: map[string]string{
				"cpu,cpuacct/kubepods/cpuacct.usage":    "5\n",
				"memory/kubepods/memory.usage_in_bytes": "500\n",
				"memory/kubepods/memory.stat":           "total_rss 300\ntotal_inactive_file 600\n",
				"memory/kubepods/memory.limit_in_bytes": "1000\n",
			},
			want: cgroupSample{cpuNanoSeconds: 5, usageBytes: 500, workingSet: 0, rssBytes: 300, limitBytes: 1000}},
		{desc: "v2 root without cpu.stat or memory.current: /proc/stat and meminfo", name: "/",
			files: map[string]string{"cgroup.controllers": "cpu memory\n"},
			// (100+0+50+2+3+5) ticks of 10 ms; used = 8 GiB - 2 GiB, working
			// set minus Inactive(file).
			want: cgroupSample{cpuNanoSeconds: 160 * 1e7, usageBytes: 6 << 30, workingSet: 5 << 30, rssBytes: 512 << 20, limitBytes: 8 << 30}},
		{desc: "v2 kubepods: cpu.stat usage_usec, memory.current, memory.stat, memory.max", name: "/kubepods",
			files: map[string]string{
				"cgroup.controllers":       "cpu memory\n",
				"kubepods/cpu.stat":        "usage_usec 2500\nuser_usec 2000\n",
				"kubepods/memory.current":  "4000\n",
				"kubepods/memory.stat":     "anon 1500\ninactive_file 1000\npgfault 9\npgmajfault 1\n",
				"kubepods/memory.max":      "max\n",
				"kubepods/cpu.pressure":    "some avg10=1.50 avg60=0.75 avg300=0.25 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
				"kubepods/memory.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=10\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=5\n",
				"kubepods/io.pressure":     "some avg10=2.00 avg60=1.00 avg300=0.50 total=99\nfull avg10=1.00 avg60=0.50 avg300=0.25 total=42\n",
			},
			want: cgroupSample{cpuNanoSeconds: 2500000, usageBytes: 4000, workingSet: 3000, rssBytes: 1500, pageFaults: 9, majorFaults: 1,
				cpuPSI:    statsapi.PSIStats{Some: statsapi.PSIData{Total: 123456, Avg10: 1.5, Avg60: 0.75, Avg300: 0.25}},
				memoryPSI: statsapi.PSIStats{Some: statsapi.PSIData{Total: 10}, Full: statsapi.PSIData{Total: 5}},
				ioPSI: statsapi.PSIStats{Some: statsapi.PSIData{Total: 99, Avg10: 2, Avg60: 1, Avg300: 0.5},
					Full: statsapi.PSIData{Total: 42, Avg10: 1, Avg60: 0.5, Avg300: 0.25}}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			got, err := Host{CgroupRoot: dir, ProcRoot: proc}.cgroup(tc.name, t0)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.time = t0
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// node is a fake node with pod default/web: sandbox sb-web (ready, an
// older NOTREADY one beside it) running container app (c-app) and an
// exited c-old, and the CRI samples of each.
type node struct {
	rt      *fakeRuntime
	clock   *clock
	p       *Provider
	cgroups string
	logs    string
	pods    string
}

func newNode(t *testing.T) *node {
	n := &node{rt: &fakeRuntime{}, clock: &clock{now: t0}, cgroups: t.TempDir(), logs: t.TempDir(), pods: t.TempDir()}
	cgroupV1(t, n.cgroups, 10e9)
	meta := &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"}
	n.rt.sandboxes = []*runtimeapi.PodSandbox{
		{Id: "sb-old", Metadata: meta, State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, CreatedAt: t0.Add(-2 * time.Hour).UnixNano()},
		{Id: "sb-web", Metadata: meta, State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: t0.Add(-time.Hour).UnixNano()},
	}
	n.rt.containers = []*runtimeapi.Container{
		{Id: "c-app", PodSandboxId: "sb-web", Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 1},
			State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: t0.Add(-30 * time.Minute).UnixNano()},
		{Id: "c-old", PodSandboxId: "sb-web", Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: t0.Add(-50 * time.Minute).UnixNano()},
	}
	// Logs: one file of the container, one of the pod.
	podLogs := kuberuntime.BuildPodLogsDirectory(n.logs, "default", "web", "uid-web")
	writeFiles(t, podLogs, map[string]string{"app/1.log": "hello\n", "pod.log": "x\n"})
	// Its directory: the managed /etc/hosts, an emptyDir and a secret
	// volume with a file each.
	writeFiles(t, filepath.Join(n.pods, "uid-web"), map[string]string{
		"etc-hosts": "127.0.0.1 localhost\n",
		"volumes/kubernetes.io~empty-dir/cache/data": "cached\n",
		"volumes/kubernetes.io~secret/token/token":   "secret\n",
	})
	n.p = New(Options{
		NodeName: "node-1", Runtime: n.rt, Images: n.rt,
		Host:    Host{CgroupRoot: n.cgroups, ProcRoot: procFiles(t)},
		RootDir: t.TempDir(), PodLogsRoot: n.logs, PodsDir: n.pods, PodCgroupRoot: "/kubepods",
		Now: n.clock.Now,
	})
	n.sample(t0, 2e9, nil)
	return n
}

// sample sets what the runtime reports at at: app has used cpu ns of CPU,
// with nanoCores as the runtime's own rate when not nil; the sandbox
// reports its own figures.
func (n *node) sample(at time.Time, cpu uint64, nanoCores *uint64) {
	n.rt.mu.Lock()
	defer n.rt.mu.Unlock()
	n.clock.Set(at)
	ts := at.UnixNano()
	var nc *runtimeapi.UInt64Value
	if nanoCores != nil {
		nc = &runtimeapi.UInt64Value{Value: *nanoCores}
	}
	app := &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Id: "c-app", Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 1}},
		Cpu:        &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu}, UsageNanoCores: nc},
		Memory: &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: &runtimeapi.UInt64Value{Value: 20 << 20},
			UsageBytes: &runtimeapi.UInt64Value{Value: 24 << 20}, RssBytes: &runtimeapi.UInt64Value{Value: 16 << 20}},
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: ts, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/nonexistent/fs"},
			UsedBytes: &runtimeapi.UInt64Value{Value: 4096}, InodesUsed: &runtimeapi.UInt64Value{Value: 3}},
	}
	// The exited container's stats, which a runtime may still list.
	old := &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Id: "c-old", Metadata: &runtimeapi.ContainerMetadata{Name: "app"}},
		Cpu:        &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 1}},
	}
	n.rt.containerStats = []*runtimeapi.ContainerStats{app, old}
	n.rt.sandboxStats = []*runtimeapi.PodSandboxStats{{
		Attributes: &runtimeapi.PodSandboxAttributes{Id: "sb-web"},
		Linux: &runtimeapi.LinuxPodSandboxStats{
			Cpu:        &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu + 1e6}},
			Memory:     &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: &runtimeapi.UInt64Value{Value: 21 << 20}},
			Process:    &runtimeapi.ProcessUsage{Timestamp: ts, ProcessCount: &runtimeapi.UInt64Value{Value: 2}},
			Containers: []*runtimeapi.ContainerStats{app, old},
		},
	}}
}

// val is *p, or MaxUint64 for nil (which no figure here reaches).
func val(p *uint64) uint64 {
	if p == nil {
		return math.MaxUint64
	}
	return *p
}

func onlyPod(t *testing.T, s *statsapi.Summary) statsapi.PodStats {
	t.Helper()
	if len(s.Pods) != 1 {
		t.Fatalf("%d pods, want default/web alone: %+v", len(s.Pods), s.Pods)
	}
	p := s.Pods[0]
	if p.PodRef != (statsapi.PodReference{Name: "web", Namespace: "default", UID: "uid-web"}) || !p.StartTime.Time.Equal(t0.Add(-time.Hour)) {
		t.Fatalf("pod %+v started %v: want default/web of the ready sandbox, started %v", p.PodRef, p.StartTime, t0.Add(-time.Hour))
	}
	if len(p.Containers) != 1 || p.Containers[0].Name != "app" || !p.Containers[0].StartTime.Time.Equal(t0.Add(-30*time.Minute)) {
		t.Fatalf("containers %+v: want the running app alone, created %v", p.Containers, t0.Add(-30*time.Minute))
	}
	return p
}

// TestUsageNanoCores: a runtime that gives no rate gets one from two
// cumulative samples, taken by the periodic update; requests read it.
func TestUsageNanoCores(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	s, err := n.p.Get(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if c := onlyPod(t, s).Containers[0]; c.CPU.UsageNanoCores != nil || val(c.CPU.UsageCoreNanoSeconds) != uint64(2e9) {
		t.Fatalf("first sample: usageNanoCores %v, usageCoreNanoSeconds %v; want none yet and 2e9", val(c.CPU.UsageNanoCores), val(c.CPU.UsageCoreNanoSeconds))
	}
	if s.Node.CPU.UsageNanoCores != nil {
		t.Fatalf("node usageNanoCores %v after one sample", val(s.Node.CPU.UsageNanoCores))
	}

	// 10 s later app has used 5 s more CPU: half a core. The node's root
	// cgroup went from 10 s to 13 s: 0.3 cores.
	n.sample(t0.Add(10*time.Second), 7e9, nil)
	cgroupV1(t, n.cgroups, 13e9)
	s, err = n.p.Get(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := val(onlyPod(t, s).Containers[0].CPU.UsageNanoCores); got != uint64(5e8) {
		t.Fatalf("usageNanoCores %v, want 5e8 ((7e9-2e9) ns over 10 s)", got)
	}
	if got := val(s.Node.CPU.UsageNanoCores); got != uint64(3e8) {
		t.Fatalf("node usageNanoCores %v, want 3e8", got)
	}
	if sys := s.Node.SystemContainers; len(sys) != 1 || sys[0].Name != "pods" || val(sys[0].CPU.UsageNanoCores) != uint64(1.5e8) {
		t.Fatalf("system containers %+v: want pods at 1.5e8 nano cores", sys)
	}

	// A request (no update) reads the last rate, even with newer counters.
	n.sample(t0.Add(20*time.Second), 17e9, nil)
	for _, get := range []func() (*statsapi.Summary, error){
		func() (*statsapi.Summary, error) { return n.p.Get(ctx, false) },
		func() (*statsapi.Summary, error) { return n.p.GetCPUAndMemoryStats(ctx) },
	} {
		s, err = get()
		if err != nil {
			t.Fatal(err)
		}
		c := onlyPod(t, s).Containers[0]
		if val(c.CPU.UsageNanoCores) != uint64(5e8) || val(c.CPU.UsageCoreNanoSeconds) != uint64(17e9) {
			t.Fatalf("request: usageNanoCores %v usageCoreNanoSeconds %v, want the cached 5e8 and the new 17e9",
				val(c.CPU.UsageNanoCores), val(c.CPU.UsageCoreNanoSeconds))
		}
	}

	// A counter that went back (the container restarted under the same
	// ID) starts over; a runtime's own rate is taken as is.
	n.sample(t0.Add(30*time.Second), 1e9, nil)
	if s, _ = n.p.Get(ctx, true); onlyPod(t, s).Containers[0].CPU.UsageNanoCores != nil {
		t.Fatalf("after the counter went back: usageNanoCores %v, want none", val(onlyPod(t, s).Containers[0].CPU.UsageNanoCores))
	}
	own := uint64(123)
	n.sample(t0.Add(40*time.Second), 2e9, &own)
	if s, _ = n.p.Get(ctx, false); val(onlyPod(t, s).Containers[0].CPU.UsageNanoCores) != own {
		t.Fatalf("runtime's own rate: %v, want 123", val(onlyPod(t, s).Containers[0].CPU.UsageNanoCores))
	}

	// The samples of a container gone for 10 minutes are forgotten.
	n.sample(t0.Add(45*time.Second), 3e9, nil)
	if _, err := n.p.Get(ctx, true); err != nil {
		t.Fatal(err)
	}
	n.rt.mu.Lock()
	n.rt.containers = n.rt.containers[1:]
	n.rt.mu.Unlock()
	n.clock.Set(t0.Add(15 * time.Minute))
	if _, err := n.p.Get(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := n.p.cpuCache.get("c-app"); got != nil {
		t.Fatalf("after 15 minutes the rate %v is still there", *got)
	}
}

func TestSummary(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	n.rt.imageFs = &runtimeapi.FilesystemUsage{Timestamp: t0.UnixNano(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: n.logs},
		UsedBytes: &runtimeapi.UInt64Value{Value: 1 << 30}, InodesUsed: &runtimeapi.UInt64Value{Value: 900}}
	s, err := n.p.Get(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	nd := s.Node
	if nd.NodeName != "node-1" || !nd.StartTime.Time.Equal(t0.Add(-time.Hour)) {
		t.Errorf("node %q started %v, want node-1 booted at %v", nd.NodeName, nd.StartTime, t0.Add(-time.Hour))
	}
	if val(nd.CPU.UsageCoreNanoSeconds) != uint64(10e9) || val(nd.Memory.WorkingSetBytes) != uint64(2e9) || val(nd.Memory.UsageBytes) != uint64(3e9) ||
		val(nd.Memory.RSSBytes) != uint64(7e8) || val(nd.Memory.AvailableBytes) != uint64(8<<30-2e9) {
		t.Errorf("node cpu %+v memory %+v", nd.CPU, nd.Memory)
	}
	if nd.Fs == nil || nd.Fs.CapacityBytes == nil || *nd.Fs.CapacityBytes == 0 || nd.Fs.UsedBytes == nil {
		t.Errorf("node fs %+v: want the state directory's filesystem", nd.Fs)
	}
	if nd.Runtime == nil || val(nd.Runtime.ImageFs.UsedBytes) != uint64(1<<30) || val(nd.Runtime.ImageFs.InodesUsed) != uint64(900) || nd.Runtime.ImageFs.CapacityBytes == nil {
		t.Errorf("image fs %+v: want the runtime's usage with its filesystem's capacity", nd.Runtime)
	}
	if nd.Rlimit == nil || val64(nd.Rlimit.MaxPID) != 95000 || val64(nd.Rlimit.NumOfRunningProcesses) != 345 {
		t.Errorf("rlimit %+v: want threads-max 95000, 345 tasks", nd.Rlimit)
	}
	if sys := nd.SystemContainers; len(sys) != 1 || val(sys[0].Memory.WorkingSetBytes) != uint64(4e8) || sys[0].Memory.AvailableBytes != nil {
		t.Errorf("system containers %+v: want pods, working set 4e8, unlimited", sys)
	}

	p := onlyPod(t, s)
	if val(p.CPU.UsageCoreNanoSeconds) != uint64(2e9+1e6) || val(p.Memory.WorkingSetBytes) != uint64(21<<20) || val(p.ProcessStats.ProcessCount) != 2 {
		t.Errorf("pod cpu %+v memory %+v processes %+v: want the sandbox's own figures", p.CPU, p.Memory, p.ProcessStats)
	}
	c := p.Containers[0]
	if val(c.Memory.WorkingSetBytes) != uint64(20<<20) || val(c.Memory.UsageBytes) != uint64(24<<20) || val(c.Memory.RSSBytes) != uint64(16<<20) {
		t.Errorf("container memory %+v", c.Memory)
	}
	if val(c.Rootfs.UsedBytes) != 4096 || val(c.Rootfs.InodesUsed) != 3 || c.Rootfs.CapacityBytes != nil {
		t.Errorf("container rootfs %+v: want the writable layer, no capacity for a filesystem this node cannot see", c.Rootfs)
	}
	if c.Logs == nil || val(c.Logs.InodesUsed) != 1 || c.Logs.CapacityBytes == nil {
		t.Errorf("container logs %+v: want one file on the node filesystem", c.Logs)
	}
	// Volumes: each directory and its file.
	if v := p.VolumeStats; len(v) != 2 || v[0].Name != "cache" || val(v[0].InodesUsed) != 2 || v[1].Name != "token" ||
		val(v[1].InodesUsed) != 2 || v[0].CapacityBytes == nil {
		t.Errorf("volume stats %+v: want cache and token, 2 inodes each, with their filesystem's capacity", v)
	}
	// Ephemeral storage: the writable layer (3 inodes), the container's
	// log (1), the pod's own log file (1), /etc/hosts (1) and the emptyDir
	// (2) when it is on disk; not the secret, which a kubelet keeps in
	// memory.
	wantInodes := uint64(6)
	if !isTmpfs(n.pods) {
		wantInodes += 2
	}
	if e := p.EphemeralStorage; e == nil || val(e.InodesUsed) != wantInodes || deref(e.UsedBytes) < 4096 {
		t.Errorf("ephemeral storage %+v: want %d inodes, at least the writable layer's bytes", e, wantInodes)
	}

	// only_cpu_and_memory: no filesystems.
	s, err = n.p.GetCPUAndMemoryStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Node.Fs != nil || s.Node.Runtime != nil || val(s.Node.Memory.WorkingSetBytes) != uint64(2e9) {
		t.Errorf("cpu and memory node %+v", s.Node)
	}
	if p := onlyPod(t, s); p.EphemeralStorage != nil || p.Containers[0].Rootfs != nil || val(p.Memory.WorkingSetBytes) != uint64(21<<20) ||
		val(p.Containers[0].Memory.PageFaults) != 0 || p.Containers[0].Memory.PageFaults == nil {
		t.Errorf("cpu and memory pod %+v: want no filesystems, missing values zero", p)
	}
}

func val64(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// TestSummaryWithoutSandboxStats: a runtime that does not implement
// ListPodSandboxStats gets pod CPU and memory summed over its containers.
func TestSummaryWithoutSandboxStats(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	n.rt.sandboxStats = nil
	for _, get := range []struct {
		desc string
		f    func() (*statsapi.Summary, error)
	}{
		{"full", func() (*statsapi.Summary, error) { return n.p.Get(ctx, false) }},
		{"cpu and memory", func() (*statsapi.Summary, error) { return n.p.GetCPUAndMemoryStats(ctx) }},
	} {
		t.Run(get.desc, func(t *testing.T) {
			s, err := get.f()
			if err != nil {
				t.Fatal(err)
			}
			p := onlyPod(t, s)
			if val(p.CPU.UsageCoreNanoSeconds) != uint64(2e9) || val(p.Memory.WorkingSetBytes) != uint64(20<<20) || val(p.Memory.RSSBytes) != uint64(16<<20) {
				t.Errorf("pod cpu %+v memory %+v: want app's", p.CPU, p.Memory)
			}
		})
	}
}

// TestNoPods: a node without pods lists none, as [] in JSON.
func TestNoPods(t *testing.T) {
	n := newNode(t)
	n.rt.sandboxes, n.rt.containers, n.rt.sandboxStats = nil, nil, []*runtimeapi.PodSandboxStats{}
	s, err := n.p.Get(context.Background(), false)
	if err != nil || s.Pods == nil || len(s.Pods) != 0 {
		t.Fatalf("Get: %v, %v; want no pods", s, err)
	}
}

// TestVolumeStatsPeriod: volumes are measured at most once a minute, as the
// kubelet's volumeStatsAggPeriod, and forgotten with their pod.
func TestVolumeStatsPeriod(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	tokenInodes := func() uint64 {
		t.Helper()
		s, err := n.p.Get(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range onlyPod(t, s).VolumeStats {
			if v.Name == "token" {
				return val(v.InodesUsed)
			}
		}
		t.Fatal("no token volume")
		return 0
	}
	if got := tokenInodes(); got != 2 {
		t.Fatalf("token: %d inodes, want 2", got)
	}
	writeFiles(t, filepath.Join(n.pods, "uid-web", "volumes", "kubernetes.io~secret", "token"), map[string]string{"ca.crt": "x\n"})
	n.clock.Set(t0.Add(30 * time.Second))
	if got := tokenInodes(); got != 2 {
		t.Fatalf("30 s later: %d inodes, want the measurement of t0 (2)", got)
	}
	n.clock.Set(t0.Add(61 * time.Second))
	if got := tokenInodes(); got != 3 {
		t.Fatalf("61 s later: %d inodes, want a new measurement (3)", got)
	}
	n.rt.mu.Lock()
	n.rt.sandboxStats = []*runtimeapi.PodSandboxStats{}
	n.rt.mu.Unlock()
	if _, err := n.p.Get(ctx, false); err != nil {
		t.Fatal(err)
	}
	n.p.volumes.mu.Lock()
	defer n.p.volumes.mu.Unlock()
	if len(n.p.volumes.pods) != 0 {
		t.Fatalf("volume measurements %v kept for pods no longer listed", n.p.volumes.pods)
	}
}

// TestSummaryPSI: the runtime's pressure stall information (cgroup v2)
// reaches the Summary for containers and pods, CPU, memory and IO, as the
// kubelet's makePSIStats has it with KubeletPSI; without it (cgroup v1)
// there is none, and a container's IO section is still stamped.
func TestSummaryPSI(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	s, err := n.p.Get(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if c := onlyPod(t, s).Containers[0]; c.CPU.PSI != nil || c.Memory.PSI != nil || c.IO == nil || c.IO.PSI != nil {
		t.Errorf("no PSI from the runtime: container cpu %+v memory %+v io %+v", c.CPU.PSI, c.Memory.PSI, c.IO)
	}
	// The node's and the pods cgroup's, zeros on cgroup v1, as the
	// kubelet's from cAdvisor.
	nd := s.Node
	if nd.CPU.PSI == nil || *nd.CPU.PSI != (statsapi.PSIStats{}) || nd.Memory.PSI == nil || nd.IO == nil || nd.IO.PSI == nil {
		t.Errorf("node cpu PSI %+v, memory PSI %+v, io %+v: want zeros", nd.CPU.PSI, nd.Memory.PSI, nd.IO)
	}
	if sys := nd.SystemContainers; len(sys) != 1 || sys[0].CPU.PSI == nil || sys[0].IO == nil {
		t.Errorf("pods system container %+v: want zero PSI", sys)
	}

	psi := func(total uint64) *runtimeapi.PsiStats {
		return &runtimeapi.PsiStats{Some: &runtimeapi.PsiData{Total: total, Avg10: 1.5, Avg60: 0.5, Avg300: 0.25},
			Full: &runtimeapi.PsiData{Total: total / 2}}
	}
	n.rt.mu.Lock()
	app := n.rt.containerStats[0]
	ts := app.GetCpu().GetTimestamp()
	app.Cpu.Psi, app.Memory.Psi = psi(100), psi(200)
	app.Io = &runtimeapi.IoUsage{Timestamp: ts, Psi: psi(300)}
	sb := n.rt.sandboxStats[0].Linux
	sb.Cpu.Psi, sb.Memory.Psi = psi(1000), psi(2000)
	sb.Io = &runtimeapi.IoUsage{Timestamp: ts, Psi: psi(3000)}
	n.rt.mu.Unlock()

	want := func(what string, got *statsapi.PSIStats, total uint64) {
		t.Helper()
		w := statsapi.PSIStats{Some: statsapi.PSIData{Total: total, Avg10: 1.5, Avg60: 0.5, Avg300: 0.25}, Full: statsapi.PSIData{Total: total / 2}}
		if got == nil || *got != w {
			t.Errorf("%s PSI %+v, want %+v", what, got, w)
		}
	}
	for _, cpuAndMemoryOnly := range []bool{false, true} {
		get := n.p.Get
		if cpuAndMemoryOnly {
			get = func(ctx context.Context, _ bool) (*statsapi.Summary, error) { return n.p.GetCPUAndMemoryStats(ctx) }
		}
		s, err := get(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		p := onlyPod(t, s)
		c := p.Containers[0]
		want("container cpu", c.CPU.PSI, 100)
		want("container memory", c.Memory.PSI, 200)
		want("pod cpu", p.CPU.PSI, 1000)
		want("pod memory", p.Memory.PSI, 2000)
		if cpuAndMemoryOnly {
			continue
		}
		if c.IO == nil || c.IO.Time.UnixNano() != ts {
			t.Errorf("container io %+v: want the runtime's, at %d", c.IO, ts)
		} else {
			want("container io", c.IO.PSI, 300)
		}
		if p.IO == nil {
			t.Error("pod io: none")
		} else {
			want("pod io", p.IO.PSI, 3000)
		}
	}
}
