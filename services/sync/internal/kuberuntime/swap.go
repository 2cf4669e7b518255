package kuberuntime

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/qos"
	"github.com/splitlet/splitlet/services/sync/internal/cm"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
)

// SwapController is the cgroup swap control the node has, which decides
// how containers are kept off swap.
type SwapController int

const (
	// NoSwapController: the node cannot limit swap; containers are left
	// as the runtime makes them.
	NoSwapController SwapController = iota
	// SwapControllerV1 is cgroup v1's memory.memsw.* (swap accounting on).
	SwapControllerV1
	// SwapControllerV2 is cgroup v2's memory.swap.max.
	SwapControllerV2
)

// cgroup2MaxSwap is the cgroup v2 file of a cgroup's swap limit (the
// kubelet's cm.Cgroup2MaxSwapFilename).
const cgroup2MaxSwap = "memory.swap.max"

// DetectSwapController finds the node's swap control as the kubelet's
// checkSwapControllerAvailability does: on cgroup v2 (cm.Unified) the
// memory.swap.max file of this process's own
// cgroup (from selfCgroup, /proc/self/cgroup), since the root cgroup has
// none; on v1 root's memory/memory.memsw.limit_in_bytes. root is
// /sys/fs/cgroup. Anything unreadable means no controller.
func DetectSwapController(root, selfCgroup string) SwapController {
	if cm.Unified(root) {
		path, ok := unifiedCgroupPath(selfCgroup)
		if !ok {
			return NoSwapController
		}
		if _, err := os.Stat(filepath.Join(root, path, cgroup2MaxSwap)); err == nil {
			return SwapControllerV2
		}
		return NoSwapController
	}
	if _, err := os.Stat(filepath.Join(root, "memory", "memory.memsw.limit_in_bytes")); err == nil {
		return SwapControllerV1
	}
	return NoSwapController
}

// ErrSwapOn is why sync does not start on a node with swap unless told to
// (--fail-swap-on=false): the kubelet's NewContainerManager message.
var ErrSwapOn = errors.New("running with swap on is not supported, please disable swap or set --fail-swap-on flag to false")

// SwapOn reports whether the node has swap on, as the kubelet's
// swap.IsSwapOn reads it: procSwaps (/proc/swaps) has more than its header
// line. A missing file is swap off.
func SwapOn(procSwaps string) (bool, error) {
	b, err := os.ReadFile(procSwaps)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return strings.Count(strings.TrimSpace(string(b)), "\n") > 0, nil
}

// unifiedCgroupPath returns the cgroup v2 path ("0::<path>") of a
// /proc/<pid>/cgroup file.
func unifiedCgroupPath(file string) (string, bool) {
	f, err := os.Open(file)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if path, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			return path, true
		}
	}
	return "", false
}

// SwapBehavior is the kubelet's memorySwap.swapBehavior.
type SwapBehavior string

// The kubelet's two swap behaviours; the empty one is NoSwap.
const (
	NoSwap      SwapBehavior = "NoSwap"
	LimitedSwap SwapBehavior = "LimitedSwap"
)

// configureSwap sets the container's swap as the kubelet's
// configureContainerSwapResources does: nothing without a swap controller,
// LimitedSwap where GetContainerSwapBehavior allows it, else NoSwap.
func configureSwap(res *runtimeapi.LinuxContainerResources, pod *v1.Pod, c *v1.Container, opts ContainerOptions) {
	if opts.SwapController == NoSwapController {
		return
	}
	if containerSwapBehavior(pod, c, opts) == LimitedSwap {
		request := c.Resources.Requests.Memory().Value()
		if limit, ok := limitedSwap(request, opts.MachineMemoryCapacity, opts.MachineSwapCapacity); ok {
			setSwapMax(res, limit)
			return
		}
	}
	configureNoSwap(res, opts.SwapController)
}

// containerSwapBehavior is the kubelet's GetContainerSwapBehavior: a
// container may use swap (LimitedSwap) only when the node is configured so
// and controls swap on cgroup v2, and the container is in a Burstable pod
// that is not critical, asks for memory, and not as much as its limit.
func containerSwapBehavior(pod *v1.Pod, c *v1.Container, opts ContainerOptions) SwapBehavior {
	if opts.SwapBehavior != LimitedSwap || opts.SwapController != SwapControllerV2 || defaults.IsCriticalPod(pod) {
		return NoSwap
	}
	req, lim := c.Resources.Requests.Memory(), c.Resources.Limits.Memory()
	if qos.GetPodQOS(pod) != v1.PodQOSBurstable || (req.IsZero() && lim.IsZero()) || req.Cmp(*lim) == 0 {
		return NoSwap
	}
	return LimitedSwap
}

// limitedSwap is a LimitedSwap container's swap: the node's swap in the
// share its memory request is of the node's memory (the kubelet's
// calcSwapForBurstablePods); not ok when the node's memory is unknown or
// smaller than the request, which then gets no swap.
func limitedSwap(request, nodeMemory, nodeSwap int64) (int64, bool) {
	if nodeMemory <= 0 || request > nodeMemory {
		return 0, false
	}
	return int64(float64(request) / float64(nodeMemory) * float64(nodeSwap)), true
}

// setSwapMax sets cgroup v2's memory.swap.max.
func setSwapMax(res *runtimeapi.LinuxContainerResources, bytes int64) {
	if res.Unified == nil {
		res.Unified = map[string]string{}
	}
	res.Unified[cgroup2MaxSwap] = strconv.FormatInt(bytes, 10)
}

// configureNoSwap keeps the container off swap, the kubelet's default
// swap behaviour (NoSwap) as its ConfigureNoSwap applies it when the node
// has a swap controller: on cgroup v1 the memory+swap limit is the memory
// limit (ignored by the runtime when there is no memory limit), on v2
// memory.swap.max is 0.
func configureNoSwap(res *runtimeapi.LinuxContainerResources, ctl SwapController) {
	switch ctl {
	case SwapControllerV1:
		res.MemorySwapLimitInBytes = res.MemoryLimitInBytes
	case SwapControllerV2:
		setSwapMax(res, 0)
	}
}
