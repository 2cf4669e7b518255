package kuberuntime

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestDetectSwapController(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		files []string // under the cgroup root
		self  string   // /proc/self/cgroup
		want  SwapController
	}{
		{desc: "v1 with swap accounting", files: []string{"memory/memory.memsw.limit_in_bytes"}, self: "4:memory:/x\n", want: SwapControllerV1},
		{desc: "v1 without swap accounting", files: []string{"memory/memory.limit_in_bytes"}, self: "4:memory:/x\n"},
		{desc: "v2, memory.swap.max in our cgroup", files: []string{"cgroup.controllers", "system.slice/sync.service/memory.swap.max"},
			self: "0::/system.slice/sync.service\n", want: SwapControllerV2},
		{desc: "v2 without swap control", files: []string{"cgroup.controllers", "system.slice/sync.service/memory.max"},
			self: "0::/system.slice/sync.service\n"},
		{desc: "v2, our cgroup unknown", files: []string{"cgroup.controllers", "memory.swap.max"}, self: "4:memory:/x\n"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range tc.files {
				p := filepath.Join(root, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			self := filepath.Join(t.TempDir(), "cgroup")
			if err := os.WriteFile(self, []byte(tc.self), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := DetectSwapController(root, self); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSwapOn(t *testing.T) {
	const header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
	for _, tc := range []struct {
		desc    string
		content *string // nil: no file
		want    bool
	}{
		{desc: "no swap: the header alone", content: ptr(header)},
		{desc: "a swap file", content: ptr(header + "/swapfile                               file\t\t2097148\t\t0\t\t-2\n"), want: true},
		{desc: "no /proc/swaps"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "swaps")
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := SwapOn(path); err != nil || got != tc.want {
				t.Errorf("SwapOn: %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	if _, err := SwapOn(t.TempDir()); err == nil {
		t.Error("SwapOn of a directory: no error")
	}
}

// Every container is kept off swap when the node can limit it, the
// kubelet's default NoSwap: on v1 the memory+swap limit equals the memory
// limit (none without one), on v2 memory.swap.max is 0.
func TestGenerateLinuxContainerResourcesNoSwap(t *testing.T) {
	for _, tc := range []struct {
		desc        string
		ctl         SwapController
		memoryLimit string
		wantSwap    int64
		wantUnified map[string]string
	}{
		{desc: "no controller", ctl: NoSwapController, memoryLimit: "64Mi"},
		{desc: "v1, a memory limit", ctl: SwapControllerV1, memoryLimit: "64Mi", wantSwap: 64 << 20},
		{desc: "v1, no memory limit", ctl: SwapControllerV1},
		{desc: "v2", ctl: SwapControllerV2, memoryLimit: "64Mi", wantUnified: map[string]string{"memory.swap.max": "0"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			c := &pod.Spec.Containers[0]
			if tc.memoryLimit != "" {
				c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse(tc.memoryLimit)}
			}
			res, err := generateLinuxContainerResources(pod, c, ContainerOptions{SwapController: tc.ctl, MachineMemoryCapacity: 8 << 30})
			if err != nil {
				t.Fatal(err)
			}
			if res.GetMemorySwapLimitInBytes() != tc.wantSwap {
				t.Errorf("memory_swap_limit_in_bytes %d, want %d", res.GetMemorySwapLimitInBytes(), tc.wantSwap)
			}
			if len(res.GetUnified()) != len(tc.wantUnified) || res.GetUnified()["memory.swap.max"] != tc.wantUnified["memory.swap.max"] {
				t.Errorf("unified %v, want %v", res.GetUnified(), tc.wantUnified)
			}
		})
	}
}

// LimitedSwap, as the kubelet's GetContainerSwapBehavior and
// calcSwapForBurstablePods: a Burstable container asking for memory below
// its limit gets the node's swap in proportion to its request, on cgroup v2
// only; every other container, and any on v1, stays off swap.
func TestGenerateLinuxContainerResourcesLimitedSwap(t *testing.T) {
	const nodeMemory, nodeSwap = 8 << 30, 2 << 30
	prio := func(p int32) *int32 { return &p }
	mem := func(q string) v1.ResourceList { return v1.ResourceList{v1.ResourceMemory: resource.MustParse(q)} }
	for _, tc := range []struct {
		desc        string
		ctl         SwapController
		behavior    SwapBehavior
		resources   v1.ResourceRequirements
		priority    *int32
		nodeMemory  int64
		wantSwapMax string // memory.swap.max; "" for none
		wantV1Swap  int64
	}{
		{desc: "burstable, request below limit: a quarter of 1 GiB of node memory's swap", ctl: SwapControllerV2, behavior: LimitedSwap,
			resources: v1.ResourceRequirements{Requests: mem("1Gi"), Limits: mem("2Gi")}, wantSwapMax: "268435456"},
		{desc: "burstable, request alone", ctl: SwapControllerV2, behavior: LimitedSwap,
			resources: v1.ResourceRequirements{Requests: mem("512Mi")}, wantSwapMax: "134217728"},
		{desc: "request equal to limit", ctl: SwapControllerV2, behavior: LimitedSwap,
			resources: v1.ResourceRequirements{Requests: mem("1Gi"), Limits: mem("1Gi")}, wantSwapMax: "0"},
		{desc: "no memory asked (besteffort)", ctl: SwapControllerV2, behavior: LimitedSwap, wantSwapMax: "0"},
		{desc: "a critical pod", ctl: SwapControllerV2, behavior: LimitedSwap, priority: prio(2000001000),
			resources: v1.ResourceRequirements{Requests: mem("1Gi"), Limits: mem("2Gi")}, wantSwapMax: "0"},
		{desc: "a request above the node's memory", ctl: SwapControllerV2, behavior: LimitedSwap,
			resources: v1.ResourceRequirements{Requests: mem("16Gi")}, wantSwapMax: "0"},
		{desc: "NoSwap configured", ctl: SwapControllerV2, behavior: NoSwap,
			resources: v1.ResourceRequirements{Requests: mem("1Gi"), Limits: mem("2Gi")}, wantSwapMax: "0"},
		{desc: "cgroup v1: NoSwap whatever the configuration", ctl: SwapControllerV1, behavior: LimitedSwap,
			resources: v1.ResourceRequirements{Requests: mem("1Gi"), Limits: mem("2Gi")}, wantV1Swap: 2 << 30},
		{desc: "no swap controller", behavior: LimitedSwap, resources: v1.ResourceRequirements{Requests: mem("1Gi"), Limits: mem("2Gi")}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			pod.Spec.Priority = tc.priority
			c := &pod.Spec.Containers[0]
			c.Resources = tc.resources
			res, err := generateLinuxContainerResources(pod, c, ContainerOptions{SwapController: tc.ctl, SwapBehavior: tc.behavior,
				MachineMemoryCapacity: nodeMemory, MachineSwapCapacity: nodeSwap})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.GetUnified()["memory.swap.max"]; got != tc.wantSwapMax {
				t.Errorf("memory.swap.max %q, want %q", got, tc.wantSwapMax)
			}
			if got := res.GetMemorySwapLimitInBytes(); got != tc.wantV1Swap {
				t.Errorf("memory_swap_limit_in_bytes %d, want %d", got, tc.wantV1Swap)
			}
		})
	}
}
