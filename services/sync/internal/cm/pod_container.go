package cm

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fscommon"
	cgroupmanager "github.com/opencontainers/cgroups/manager"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/splitlet/splitlet/internal/qos"
)

// ResourceConfig is what a pod cgroup is given: the part of the kubelet's
// cm.ResourceConfig splitlet writes. Nil fields are left as they are.
type ResourceConfig struct {
	// CPUShares is cpu.shares (cgroup v1), converted to cpu.weight on v2.
	CPUShares *uint64
	// CPUQuota and CPUPeriod are the CFS quota and period in microseconds;
	// a quota of -1 is no quota.
	CPUQuota  *int64
	CPUPeriod *uint64
	// Memory is the memory limit in bytes.
	Memory *int64
	// HugePageLimit maps a page size in bytes to its limit in bytes.
	HugePageLimit map[int64]int64
}

// ResourceConfigForPod is the pod cgroup's configuration for pod, the
// kubelet's ResourceConfigForPod with PodLevelResources on: the sum of the
// containers' requests and limits (pod-level resources winning, overhead
// added) as CPU shares, a CFS quota of cpuPeriod microseconds and a memory
// limit; a Burstable pod gets a quota or a memory limit only when every
// container declares one (or the pod does), a BestEffort pod the minimum
// shares. Without enforceCPULimits (--cpu-cfs-quota=false) the quota is -1.
func ResourceConfigForPod(pod *v1.Pod, enforceCPULimits bool, cpuPeriod uint64) ResourceConfig {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	cpuDeclared, memoryDeclared := limitsDeclared(pod)

	var cpuRequests, cpuLimits, memoryLimits int64
	if q, ok := reqs[v1.ResourceCPU]; ok {
		cpuRequests = q.MilliValue()
	}
	if q, ok := limits[v1.ResourceCPU]; ok {
		cpuLimits = q.MilliValue()
	}
	if q, ok := limits[v1.ResourceMemory]; ok {
		memoryLimits = q.Value()
	}
	shares := uint64(MilliCPUToShares(cpuRequests))
	quota := MilliCPUToQuota(cpuLimits, int64(cpuPeriod))
	if !enforceCPULimits {
		quota = -1
	}

	out := ResourceConfig{HugePageLimit: hugePageLimits(reqs)}
	switch qos.GetPodQOS(pod) {
	case v1.PodQOSGuaranteed:
		out.CPUShares, out.CPUQuota, out.CPUPeriod, out.Memory = &shares, &quota, &cpuPeriod, &memoryLimits
	case v1.PodQOSBurstable:
		out.CPUShares = &shares
		if cpuDeclared {
			out.CPUQuota, out.CPUPeriod = &quota, &cpuPeriod
		}
		if memoryDeclared {
			out.Memory = &memoryLimits
		}
	default:
		minimum := uint64(MinShares)
		out.CPUShares = &minimum
	}
	return out
}

// limitsDeclared reports whether every container, init containers
// included, has a CPU and a memory limit, or the pod has pod-level ones:
// the kubelet's cpuLimitsDeclared and memoryLimitsDeclared.
func limitsDeclared(pod *v1.Pod) (cpu, memory bool) {
	cpu, memory = true, true
	check := func(c *v1.Container) {
		if c.Resources.Limits.Cpu().IsZero() {
			cpu = false
		}
		if c.Resources.Limits.Memory().IsZero() {
			memory = false
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if r := pod.Spec.Resources; r != nil {
		cpu = cpu || !r.Limits.Cpu().IsZero()
		memory = memory || !r.Limits.Memory().IsZero()
	}
	return cpu, memory
}

// hugePageLimits maps each hugepages-<size> request to its page size in
// bytes, the kubelet's HugePageLimits.
func hugePageLimits(reqs v1.ResourceList) map[int64]int64 {
	out := map[int64]int64{}
	for name, q := range reqs {
		size, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		pageSize, err := resourceQuantityBytes(size)
		if err != nil {
			continue
		}
		out[pageSize] += q.Value()
	}
	return out
}

// PodContainerManager keeps pod cgroups on the cgroupfs driver, the
// kubelet's podContainerManagerImpl with cgroupsPerQOS: it creates a
// pod's cgroup, with its ResourceConfigForPod, before the runtime puts the
// pod's sandbox in it, and changes it when the pod is resized. The
// runtime creates the sandbox's and containers' cgroups below it.
// Removing it is PodCgroups'.
type PodContainerManager struct {
	name             func(*v1.Pod) string
	enforceCPULimits bool
	cpuPeriod        uint64
	qos              *QOSContainerManager
}

// NewPodContainerManager returns a manager naming each pod's cgroup with
// name (/kubepods/burstable/pod<uid>, ...), relative to the cgroupfs
// mount, and giving it CFS quotas of cpuPeriod microseconds unless
// enforceCPULimits is off. qos, when set, is updated before a pod's cgroup
// is made, so that the Burstable tier counts the new pod.
func NewPodContainerManager(name func(*v1.Pod) string, enforceCPULimits bool, cpuPeriod uint64, qos *QOSContainerManager) *PodContainerManager {
	return &PodContainerManager{name: name, enforceCPULimits: enforceCPULimits, cpuPeriod: cpuPeriod, qos: qos}
}

// MountRoot is where PodContainerManager makes pod cgroups: the cgroupfs
// mounts of the process, as opencontainers/cgroups finds them.
const MountRoot = "/sys/fs/cgroup"

// Writable returns why pod cgroups cannot be made under the cgroupfs
// mounted at root, or nil: it fails where that is mounted read-only, as in
// a container not given the host's cgroupfs.
func Writable(root string) error {
	dir := root
	if !Unified(root) {
		dir = filepath.Join(root, "memory")
	}
	return accessWrite(dir)
}

// ResourceConfig is ResourceConfigForPod with the manager's CPU settings.
func (m *PodContainerManager) ResourceConfig(pod *v1.Pod) ResourceConfig {
	return ResourceConfigForPod(pod, m.enforceCPULimits, m.cpuPeriod)
}

// EnsureExists creates the pod's cgroup with its resources unless it
// exists, the kubelet's podContainerManagerImpl.EnsureExists. An existing
// cgroup (made by the runtime for a pod started before, or by an earlier
// call) is left as it is: resizes change it (Set).
func (m *PodContainerManager) EnsureExists(pod *v1.Pod) error {
	mgr, res, err := m.manager(pod, m.ResourceConfig(pod))
	if err != nil {
		return err
	}
	if cgroupExists(mgr) {
		return nil
	}
	if m.qos != nil {
		// As the kubelet's syncPod: a QoS update that fails does not stop
		// the pod (the periodic update logs and retries it).
		_ = m.qos.Update()
	}
	// Apply(-1) creates the cgroup in every hierarchy without moving a
	// process into it; Set then writes the limits (the kubelet's
	// cgroupCommon.Create).
	if err := mgr.Apply(-1); err != nil {
		return fmt.Errorf("create pod cgroup %s: %w", m.name(pod), err)
	}
	if err := mgr.Set(res); err != nil {
		return fmt.Errorf("set pod cgroup %s: %w", m.name(pod), err)
	}
	return nil
}

// Set writes the set fields of cfg to the pod's cgroup, the kubelet's
// SetPodCgroupConfig.
func (m *PodContainerManager) Set(pod *v1.Pod, cfg ResourceConfig) error {
	mgr, res, err := m.manager(pod, cfg)
	if err != nil {
		return err
	}
	if err := mgr.Set(res); err != nil {
		return fmt.Errorf("set pod cgroup %s: %w", m.name(pod), err)
	}
	return nil
}

// Current reads the pod cgroup's CPU quota (-1: none) and shares and its
// memory limit (math.MaxInt64: none), the kubelet's GetPodCgroupConfig.
func (m *PodContainerManager) Current(pod *v1.Pod) (ResourceConfig, error) {
	mgr, _, err := m.manager(pod, ResourceConfig{})
	if err != nil {
		return ResourceConfig{}, err
	}
	if cgroups.IsCgroup2UnifiedMode() {
		return currentV2(mgr.Path(""))
	}
	return currentV1(mgr.Path("cpu"), mgr.Path("memory"))
}

func (m *PodContainerManager) manager(pod *v1.Pod, cfg ResourceConfig) (cgroups.Manager, *cgroups.Resources, error) {
	res := toResources(cfg)
	mgr, err := cgroupmanager.New(&cgroups.Cgroup{Path: m.name(pod), Resources: res})
	if err != nil {
		return nil, nil, fmt.Errorf("pod cgroup %s: %w", m.name(pod), err)
	}
	return mgr, res, nil
}

// cgroupExists reports whether the cgroup is in every hierarchy the kubelet
// requires of a pod cgroup (cgroupCommon.Exists: cpu, cpuacct, cpuset,
// memory, pids and hugetlb where mounted; on cgroup v2 the one directory).
func cgroupExists(mgr cgroups.Manager) bool {
	paths := mgr.GetPaths()
	if cgroups.IsCgroup2UnifiedMode() {
		return dirExists(paths[""])
	}
	for _, c := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "hugetlb"} {
		if p, ok := paths[c]; ok && !dirExists(p) {
			return false
		}
	}
	return true
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// toResources is the kubelet's cgroupCommon.toResources: devices and the
// freezer untouched, shares as cpu.weight on cgroup v2, and every huge page
// size the pod does not request limited to 0.
func toResources(cfg ResourceConfig) *cgroups.Resources {
	res := &cgroups.Resources{SkipDevices: true, SkipFreezeOnSet: true}
	if cfg.Memory != nil {
		res.Memory = *cfg.Memory
	}
	if cfg.CPUShares != nil {
		if cgroups.IsCgroup2UnifiedMode() {
			res.CpuWeight = cpuWeight(*cfg.CPUShares)
		} else {
			res.CpuShares = *cfg.CPUShares
		}
	}
	if cfg.CPUQuota != nil {
		res.CpuQuota = *cfg.CPUQuota
	}
	if cfg.CPUPeriod != nil {
		res.CpuPeriod = *cfg.CPUPeriod
	}
	if cfg.HugePageLimit != nil && hugetlbSupported() {
		set := map[string]bool{}
		for size, limit := range cfg.HugePageLimit {
			name, err := hugePageSizeName(size)
			if err != nil {
				continue
			}
			res.HugetlbLimit = append(res.HugetlbLimit, &cgroups.HugepageLimit{Pagesize: name, Limit: uint64(limit)})
			set[name] = true
		}
		for _, name := range cgroups.HugePageSizes() {
			if !set[name] {
				res.HugetlbLimit = append(res.HugetlbLimit, &cgroups.HugepageLimit{Pagesize: name})
			}
		}
	}
	return res
}

// hugetlbSupported reports, once, whether the hugetlb controller is
// there to limit huge pages (the kubelet's maybeSetHugetlb skips them
// when it is not): mounted on cgroup v1, enabled at the root on v2.
var hugetlbSupported = sync.OnceValue(func() bool {
	if cgroups.IsCgroup2UnifiedMode() {
		b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
		return err == nil && slices.Contains(strings.Fields(string(b)), "hugetlb")
	}
	_, err := cgroups.FindCgroupMountpoint("", "hugetlb")
	return err == nil
})

// cpuWeight converts shares [2, 262144] to cgroup v2's weight [1, 10000],
// the kubelet's getCPUWeight.
func cpuWeight(shares uint64) uint64 {
	if shares >= MaxShares {
		return 10000
	}
	return 1 + ((shares-2)*9999)/262142
}

// sharesFromWeight reads a cgroup v2 weight back as shares, the kubelet's
// cpuWeightToCpuShares (which rounds down: not an exact inverse).
func sharesFromWeight(weight uint64) uint64 {
	return 2 + ((weight-1)*262142)/9999
}

func currentV1(cpuDir, memoryDir string) (ResourceConfig, error) {
	quota, err := fscommon.GetCgroupParamInt(cpuDir, "cpu.cfs_quota_us")
	if err != nil {
		return ResourceConfig{}, err
	}
	period, err := fscommon.GetCgroupParamUint(cpuDir, "cpu.cfs_period_us")
	if err != nil {
		return ResourceConfig{}, err
	}
	shares, err := fscommon.GetCgroupParamUint(cpuDir, "cpu.shares")
	if err != nil {
		return ResourceConfig{}, err
	}
	// The kernel's "no limit" is a page-aligned maximum that
	// GetCgroupParamUint reads as MaxUint64.
	mem, err := fscommon.GetCgroupParamUint(memoryDir, "memory.limit_in_bytes")
	if err != nil {
		return ResourceConfig{}, err
	}
	memory := int64(math.MaxInt64)
	if mem < math.MaxInt64 {
		memory = int64(mem)
	}
	return ResourceConfig{CPUQuota: &quota, CPUPeriod: &period, CPUShares: &shares, Memory: &memory}, nil
}

func currentV2(dir string) (ResourceConfig, error) {
	max, err := fscommon.GetCgroupParamString(dir, "cpu.max")
	if err != nil {
		return ResourceConfig{}, err
	}
	f := strings.Fields(max)
	if len(f) != 2 {
		return ResourceConfig{}, fmt.Errorf("%s/cpu.max: %q is not <quota> <period>", dir, max)
	}
	quota := int64(-1)
	if f[0] != "max" {
		if quota, err = strconv.ParseInt(f[0], 10, 64); err != nil {
			return ResourceConfig{}, fmt.Errorf("%s/cpu.max: %w", dir, err)
		}
	}
	period, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return ResourceConfig{}, fmt.Errorf("%s/cpu.max: %w", dir, err)
	}
	weight, err := fscommon.GetCgroupParamUint(dir, "cpu.weight")
	if err != nil {
		return ResourceConfig{}, err
	}
	shares := sharesFromWeight(weight)
	memory := int64(math.MaxInt64)
	mem, err := fscommon.GetCgroupParamString(dir, "memory.max")
	if err != nil {
		return ResourceConfig{}, err
	}
	if mem != "max" {
		if memory, err = strconv.ParseInt(mem, 10, 64); err != nil {
			return ResourceConfig{}, fmt.Errorf("%s/memory.max: %w", dir, err)
		}
	}
	return ResourceConfig{CPUQuota: &quota, CPUPeriod: &period, CPUShares: &shares, Memory: &memory}, nil
}

// errNotHugePageSize is a size no hugetlb page has.
var errNotHugePageSize = errors.New("not a huge page size")

// hugePageSizeName names a page size in bytes as the hugetlb controller
// does (2MB, 1GB), the kubelet's HugePageUnitSizeFromByteSize.
func hugePageSizeName(size int64) (string, error) {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for size >= 1024 && size%1024 == 0 && i < len(units)-1 {
		size /= 1024
		i++
	}
	if size <= 0 || i == 0 {
		return "", fmt.Errorf("%d: %w", size, errNotHugePageSize)
	}
	return strconv.FormatInt(size, 10) + units[i], nil
}

func resourceQuantityBytes(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	return q.Value(), nil
}

// accessWrite fails when dir cannot be written to, read-only mounts
// included (access(2) with W_OK).
func accessWrite(dir string) error {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return nil
}
