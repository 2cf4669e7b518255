package nodeinfo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/splitlet/splitlet/services/admission/predicate"
)

// fakeMachine writes /proc and /sys files for a machine with 4Gi of memory,
// 64 2Mi huge pages, no 1Gi pages, and the given cgroup cpu.max.
func fakeMachine(t *testing.T, cpuMax string) (procRoot, sysRoot string) {
	t.Helper()
	root := t.TempDir()
	procRoot, sysRoot = filepath.Join(root, "proc"), filepath.Join(root, "sys")
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(procRoot, "meminfo"), "MemTotal:        4194304 kB\nMemFree:  1000 kB\n")
	write(filepath.Join(sysRoot, "kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"), "64\n")
	write(filepath.Join(sysRoot, "kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"), "0\n")
	if cpuMax != "" {
		write(filepath.Join(sysRoot, "fs/cgroup/cpu.max"), cpuMax)
	}
	return procRoot, sysRoot
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func TestBuildResources(t *testing.T) {
	procRoot, sysRoot := fakeMachine(t, "")
	machineCPU := int64(runtime.NumCPU()) * 1000
	base := func() Config {
		return Config{
			Hostname: "node-a", ProcRoot: procRoot, SysRoot: sysRoot, RootDir: t.TempDir(),
			// A fixed disk, so the expectations do not depend on the test machine.
			Capacity: v1.ResourceList{v1.ResourceEphemeralStorage: q("100Gi")},
		}
	}
	tests := []struct {
		desc            string
		mutate          func(*Config)
		wantCapacity    map[v1.ResourceName]resource.Quantity
		wantAllocatable map[v1.ResourceName]resource.Quantity
	}{
		{
			desc: "defaults: 110 pods, 100Mi and 10% eviction reservations, huge pages out of memory",
			wantCapacity: map[v1.ResourceName]resource.Quantity{
				v1.ResourceCPU: *resource.NewMilliQuantity(machineCPU, resource.DecimalSI), v1.ResourceMemory: q("4Gi"),
				v1.ResourcePods: q("110"), "hugepages-2Mi": q("128Mi"), "hugepages-1Gi": q("0"),
			},
			wantAllocatable: map[v1.ResourceName]resource.Quantity{
				v1.ResourceCPU:    *resource.NewMilliQuantity(machineCPU, resource.DecimalSI),
				v1.ResourceMemory: q("3868Mi"), // 4096Mi - 100Mi eviction - 128Mi huge pages
				// 100Gi - 10% = 90Gi
				v1.ResourceEphemeralStorage: q("90Gi"), v1.ResourcePods: q("110"), "hugepages-2Mi": q("128Mi"),
			},
		},
		{
			desc: "system and kube reservations add up with eviction",
			mutate: func(c *Config) {
				c.Capacity[v1.ResourceCPU] = q("4")
				c.SystemReserved = v1.ResourceList{v1.ResourceCPU: q("500m"), v1.ResourceMemory: q("512Mi")}
				c.KubeReserved = v1.ResourceList{v1.ResourceCPU: q("250m"), v1.ResourceMemory: q("256Mi"), v1.ResourceEphemeralStorage: q("10Gi")}
				c.EvictionHard = map[string]string{"memory.available": "200Mi", "nodefs.available": "5Gi", "pid.available": "10%"}
			},
			wantAllocatable: map[v1.ResourceName]resource.Quantity{
				v1.ResourceCPU:              q("3250m"),
				v1.ResourceMemory:           q("3000Mi"), // 4096 - 512 - 256 - 200 - 128
				v1.ResourceEphemeralStorage: q("85Gi"),
			},
		},
		{
			desc: "percentage memory threshold is of memory capacity",
			mutate: func(c *Config) {
				c.EvictionHard = map[string]string{"memory.available": "25%"}
			},
			wantAllocatable: map[v1.ResourceName]resource.Quantity{
				v1.ResourceMemory: q("2944Mi"), v1.ResourceEphemeralStorage: q("100Gi"), // 4096 - 1024 - 128
			},
		},
		{
			desc:   "empty eviction map reserves nothing",
			mutate: func(c *Config) { c.EvictionHard = map[string]string{} },
			wantAllocatable: map[v1.ResourceName]resource.Quantity{
				v1.ResourceMemory: q("3968Mi"), v1.ResourceEphemeralStorage: q("100Gi"),
			},
		},
		{
			desc:            "reservation larger than capacity clamps at zero",
			mutate:          func(c *Config) { c.SystemReserved = v1.ResourceList{v1.ResourceCPU: q("1000")} },
			wantAllocatable: map[v1.ResourceName]resource.Quantity{v1.ResourceCPU: q("0")},
		},
		{
			desc: "configured capacity adds extended resources and max pods applies",
			mutate: func(c *Config) {
				c.Capacity["example.com/gpu"] = q("2")
				c.MaxPods = 20
			},
			wantCapacity:    map[v1.ResourceName]resource.Quantity{"example.com/gpu": q("2"), v1.ResourcePods: q("20")},
			wantAllocatable: map[v1.ResourceName]resource.Quantity{"example.com/gpu": q("2"), v1.ResourcePods: q("20")},
		},
		{
			desc: "explicit allocatable wins over the arithmetic",
			mutate: func(c *Config) {
				c.SystemReserved = v1.ResourceList{v1.ResourceMemory: q("1Gi")}
				c.Allocatable = v1.ResourceList{v1.ResourceMemory: q("1Gi")}
			},
			wantAllocatable: map[v1.ResourceName]resource.Quantity{v1.ResourceMemory: q("1Gi")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			cfg := base()
			if tc.mutate != nil {
				tc.mutate(&cfg)
			}
			node, err := Build(cfg)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			check := func(what string, got v1.ResourceList, want map[v1.ResourceName]resource.Quantity) {
				for name, w := range want {
					g, ok := got[name]
					if !ok || g.Cmp(w) != 0 {
						t.Errorf("%s[%s] = %s (present %v), want %s", what, name, g.String(), ok, w.String())
					}
				}
			}
			check("capacity", node.Status.Capacity, tc.wantCapacity)
			check("allocatable", node.Status.Allocatable, tc.wantAllocatable)
		})
	}
}

func TestBuildMetadata(t *testing.T) {
	procRoot, sysRoot := fakeMachine(t, "")
	taint := v1.Taint{Key: "dedicated", Value: "edge", Effect: v1.TaintEffectNoExecute}
	node, err := Build(Config{
		Hostname: "  Node-A.Example  ", ProcRoot: procRoot, SysRoot: sysRoot, RootDir: t.TempDir(),
		Labels: map[string]string{"zone": "z1", v1.LabelArchStable: "custom"},
		Taints: []v1.Taint{taint}, SupplementalGroupsPolicy: true,
	})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	tests := []struct {
		desc string
		got  string
		want string
	}{
		{desc: "name defaults to the canonical hostname", got: node.Name, want: "node-a.example"},
		{desc: "hostname label", got: node.Labels[v1.LabelHostname], want: "node-a.example"},
		{desc: "os label", got: node.Labels[v1.LabelOSStable], want: runtime.GOOS},
		{desc: "beta os label", got: node.Labels["beta.kubernetes.io/os"], want: runtime.GOOS},
		{desc: "beta arch label", got: node.Labels["beta.kubernetes.io/arch"], want: runtime.GOARCH},
		{desc: "configured label wins over a standard one", got: node.Labels[v1.LabelArchStable], want: "custom"},
		{desc: "configured label added", got: node.Labels["zone"], want: "z1"},
		{desc: "splitlet's agent label", got: node.Labels[AgentLabel], want: AgentLabelValue},
		{desc: "node info os", got: node.Status.NodeInfo.OperatingSystem, want: runtime.GOOS},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0] != taint {
		t.Errorf("taints = %v, want [%v]", node.Spec.Taints, taint)
	}
	if f := node.Status.Features; f == nil || f.SupplementalGroupsPolicy == nil || !*f.SupplementalGroupsPolicy {
		t.Errorf("features = %+v, want SupplementalGroupsPolicy true", f)
	}
	named, err := Build(Config{Hostname: "h", NodeName: "explicit", ProcRoot: procRoot, SysRoot: sysRoot, RootDir: t.TempDir()})
	if err != nil || named.Name != "explicit" || named.Labels[v1.LabelHostname] != "h" {
		t.Errorf("explicit NodeName: got name %q hostname label %q err %v", named.Name, named.Labels[v1.LabelHostname], err)
	}
}

// The kubernetes.io/hostname label follows the node name, as the
// kubelet's --hostname-override names the node and labels it: a pod
// selecting the node sync registers by hostname is admitted.
func TestBuildHostnameFollowsNodeName(t *testing.T) {
	procRoot, sysRoot := fakeMachine(t, "")
	machine, err := getHostname("")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc               string
		nodeName, hostname string
		wantName, wantHost string
	}{
		{desc: "neither: the machine's hostname", wantName: machine, wantHost: machine},
		{desc: "a node name is the hostname too", nodeName: "node-b", wantName: "node-b", wantHost: "node-b"},
		{desc: "a hostname alone names the node", hostname: "Host-C", wantName: "host-c", wantHost: "host-c"},
		{desc: "both set apart", nodeName: "node-b", hostname: "host-c", wantName: "node-b", wantHost: "host-c"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			node, err := Build(Config{NodeName: tc.nodeName, Hostname: tc.hostname, ProcRoot: procRoot, SysRoot: sysRoot, RootDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if node.Name != tc.wantName || node.Labels[v1.LabelHostname] != tc.wantHost {
				t.Errorf("name %q, hostname label %q; want %q, %q", node.Name, node.Labels[v1.LabelHostname], tc.wantName, tc.wantHost)
			}
		})
	}
}

func TestBuildInvalid(t *testing.T) {
	procRoot, sysRoot := fakeMachine(t, "")
	tests := []struct {
		desc   string
		mutate func(*Config)
	}{
		{desc: "unknown eviction signal", mutate: func(c *Config) { c.EvictionHard = map[string]string{"memory.free": "1Gi"} }},
		{desc: "percentage above 100", mutate: func(c *Config) { c.EvictionHard = map[string]string{"nodefs.available": "120%"} }},
		{desc: "unparsable quantity", mutate: func(c *Config) { c.EvictionHard = map[string]string{"memory.available": "lots"} }},
		{desc: "negative quantity", mutate: func(c *Config) { c.EvictionHard = map[string]string{"memory.available": "-1Mi"} }},
		{desc: "taint without effect", mutate: func(c *Config) { c.Taints = []v1.Taint{{Key: "k"}} }},
		{desc: "taint without key", mutate: func(c *Config) { c.Taints = []v1.Taint{{Effect: v1.TaintEffectNoSchedule}} }},
		{desc: "blank hostname override", mutate: func(c *Config) { c.Hostname = "   " }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			cfg := Config{Hostname: "h", ProcRoot: procRoot, SysRoot: sysRoot, RootDir: t.TempDir()}
			tc.mutate(&cfg)
			if _, err := Build(cfg); !errors.Is(err, errdefs.ErrInvalidArgument) {
				t.Fatalf("Build error = %v, want one wrapping ErrInvalidArgument", err)
			}
		})
	}
}

func TestBuildDetectionErrors(t *testing.T) {
	procRoot, sysRoot := fakeMachine(t, "")
	tests := []struct {
		desc string
		cfg  Config
	}{
		{desc: "no meminfo", cfg: Config{Hostname: "h", ProcRoot: t.TempDir(), SysRoot: sysRoot}},
		{desc: "root dir missing", cfg: Config{Hostname: "h", ProcRoot: procRoot, SysRoot: sysRoot, RootDir: "/does/not/exist"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if _, err := Build(tc.cfg); err == nil {
				t.Fatal("Build succeeded, want a detection error")
			}
		})
	}
}

func TestCPUQuota(t *testing.T) {
	machine := int64(runtime.NumCPU()) * 1000
	tests := []struct {
		desc  string
		setup func(t *testing.T, cgroup string)
		want  int64
	}{
		{desc: "no cgroup files", setup: func(*testing.T, string) {}, want: machine},
		{desc: "v2 without quota", setup: writeFile("cpu.max", "max 100000\n"), want: machine},
		{desc: "v2 quota of 1.5 cpus", setup: writeFile("cpu.max", "150000 100000\n"), want: min(machine, 1500)},
		{desc: "v2 quota above the machine", setup: writeFile("cpu.max", "100000000 100000\n"), want: machine},
		{desc: "v1 without quota", setup: both(writeFile("cpu/cpu.cfs_quota_us", "-1\n"), writeFile("cpu/cpu.cfs_period_us", "100000\n")), want: machine},
		{desc: "v1 quota of half a cpu", setup: both(writeFile("cpu/cpu.cfs_quota_us", "50000\n"), writeFile("cpu/cpu.cfs_period_us", "100000\n")), want: min(machine, 500)},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			sys := t.TempDir()
			tc.setup(t, filepath.Join(sys, "fs", "cgroup"))
			if got := cpuMillis(sys); got != tc.want {
				t.Errorf("cpuMillis = %d, want %d", got, tc.want)
			}
		})
	}
}

func writeFile(rel, content string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func both(a, b func(*testing.T, string)) func(*testing.T, string) {
	return func(t *testing.T, dir string) { a(t, dir); b(t, dir) }
}

func TestDetectsDiskOfRootDir(t *testing.T) {
	procRoot, sysRoot := fakeMachine(t, "")
	node, err := Build(Config{Hostname: "h", ProcRoot: procRoot, SysRoot: sysRoot, RootDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	got := node.Status.Capacity[v1.ResourceEphemeralStorage]
	if got.Sign() <= 0 {
		t.Fatalf("ephemeral-storage capacity = %s, want the size of the temp dir's filesystem", got.String())
	}
	alloc := node.Status.Allocatable[v1.ResourceEphemeralStorage]
	if alloc.Cmp(got) >= 0 {
		t.Errorf("allocatable %s not below capacity %s despite the default nodefs.available threshold", alloc.String(), got.String())
	}
}

func TestStaticReturnsCopies(t *testing.T) {
	src := NewStatic(&v1.Node{})
	n, _ := src.Node(context.Background())
	n.Name = "changed"
	again, err := src.Node(context.Background())
	if err != nil || again.Name != "" {
		t.Fatalf("second Node() = %q, %v; want the original, unchanged", again.Name, err)
	}
}

func TestStaticSharedIsTheNode(t *testing.T) {
	src := NewStatic(&v1.Node{})
	a, _ := src.Shared(context.Background())
	b, err := src.Shared(context.Background())
	if err != nil || a != b {
		t.Fatalf("Shared() = %p then %p, %v; want the one node both times", a, b, err)
	}
}

// SetFeatures gives later callers a node with the new features and leaves
// the node earlier callers hold as it was.
func TestStaticSetFeatures(t *testing.T) {
	no, yes := false, true
	src := NewStatic(&v1.Node{Status: v1.NodeStatus{Features: &v1.NodeFeatures{SupplementalGroupsPolicy: &no}}})
	before, _ := src.Shared(context.Background())
	if src.SetFeatures(&v1.NodeFeatures{SupplementalGroupsPolicy: &no}) {
		t.Error("SetFeatures with the same features reported a change")
	}
	if !src.SetFeatures(&v1.NodeFeatures{SupplementalGroupsPolicy: &yes}) {
		t.Fatal("SetFeatures with new features reported no change")
	}
	after, _ := src.Shared(context.Background())
	if *before.Status.Features.SupplementalGroupsPolicy || !*after.Status.Features.SupplementalGroupsPolicy {
		t.Fatalf("before %v after %v, want false then true", *before.Status.Features.SupplementalGroupsPolicy, *after.Status.Features.SupplementalGroupsPolicy)
	}
	if copied, _ := src.Node(context.Background()); !*copied.Status.Features.SupplementalGroupsPolicy {
		t.Error("Node() does not carry the new features")
	}
}

// Static's Node and Shared methods are what the predicate handler takes.
var (
	_ predicate.GetNodeFunc = NewStatic(&v1.Node{}).Node
	_ predicate.GetNodeFunc = NewStatic(&v1.Node{}).Shared
)
