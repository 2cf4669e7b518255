package nodeinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// detectCapacity measures the machine.
func detectCapacity(cfg Config) (v1.ResourceList, error) {
	memBytes, err := memTotal(filepath.Join(cfg.ProcRoot, "meminfo"))
	if err != nil {
		return nil, err
	}
	storage, err := fsSize(cfg.RootDir)
	if err != nil {
		return nil, err
	}
	capacity := v1.ResourceList{
		v1.ResourceCPU:              *resource.NewMilliQuantity(cpuMillis(cfg.SysRoot), resource.DecimalSI),
		v1.ResourceMemory:           *resource.NewQuantity(memBytes, resource.BinarySI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(storage, resource.BinarySI),
		v1.ResourcePods:             *resource.NewQuantity(cfg.MaxPods, resource.DecimalSI),
	}
	hp, err := hugePages(filepath.Join(cfg.SysRoot, "kernel", "mm", "hugepages"))
	if err != nil {
		return nil, err
	}
	for name, q := range hp {
		capacity[name] = q
	}
	return capacity, nil
}

// cpuMillis is the number of logical CPUs this process may use, in
// millicores, lowered to the CFS quota of the cgroup mounted under sysRoot
// when that is smaller: when splitlet runs in a container limited to 1.5
// CPUs, its pods share those 1.5 CPUs, not the machine's.
func cpuMillis(sysRoot string) int64 {
	millis := int64(runtime.NumCPU()) * 1000
	if q, ok := cgroupCPUQuotaMillis(filepath.Join(sysRoot, "fs", "cgroup")); ok && q < millis {
		return q
	}
	return millis
}

// cgroupCPUQuotaMillis reads cpu.max (cgroup v2) or cpu.cfs_quota_us and
// cpu.cfs_period_us (cgroup v1). It reports false when there is no quota.
func cgroupCPUQuotaMillis(cgroupRoot string) (int64, bool) {
	if b, err := os.ReadFile(filepath.Join(cgroupRoot, "cpu.max")); err == nil {
		f := strings.Fields(string(b))
		if len(f) != 2 || f[0] == "max" {
			return 0, false
		}
		return quotaMillis(f[0], f[1])
	}
	for _, dir := range []string{"cpu", "cpu,cpuacct"} {
		quota, err := os.ReadFile(filepath.Join(cgroupRoot, dir, "cpu.cfs_quota_us"))
		if err != nil {
			continue
		}
		period, err := os.ReadFile(filepath.Join(cgroupRoot, dir, "cpu.cfs_period_us"))
		if err != nil {
			continue
		}
		return quotaMillis(strings.TrimSpace(string(quota)), strings.TrimSpace(string(period)))
	}
	return 0, false
}

func quotaMillis(quota, period string) (int64, bool) {
	q, err1 := strconv.ParseInt(quota, 10, 64)
	p, err2 := strconv.ParseInt(period, 10, 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		// -1 is cgroup v1's "no quota".
		return 0, false
	}
	return q * 1000 / p, true
}

// memTotal returns MemTotal from a meminfo file, in bytes.
func memTotal(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading memory capacity: %w", err)
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 || f[0] != "MemTotal:" {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing MemTotal in %s: %w", path, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no MemTotal in %s", path)
}

// fsSize is the total size of the filesystem holding dir.
func fsSize(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Blocks) * int64(st.Bsize), nil
}

// hugePages lists pre-allocated huge pages per page size as
// hugepages-<size> resources in bytes. Every supported size appears, at zero
// when none are allocated, as on a kubelet's node. A missing directory (no
// huge page support) yields none.
func hugePages(dir string) (v1.ResourceList, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading huge pages: %w", err)
	}
	out := v1.ResourceList{}
	for _, e := range entries {
		sizeKB, ok := strings.CutPrefix(e.Name(), "hugepages-")
		if !ok {
			continue
		}
		sizeKB, ok = strings.CutSuffix(sizeKB, "kB")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(sizeKB, 10, 64)
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "nr_hugepages"))
		if err != nil {
			return nil, fmt.Errorf("reading huge pages: %w", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parsing %s/nr_hugepages: %w", e.Name(), err)
		}
		pageSize := resource.NewQuantity(kb*1024, resource.BinarySI)
		name := v1.ResourceName(v1.ResourceHugePagesPrefix + pageSize.String())
		out[name] = *resource.NewQuantity(n*kb*1024, resource.BinarySI)
	}
	return out, nil
}
