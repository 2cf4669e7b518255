package stats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/splitlet/splitlet/services/sync/internal/cm"
)

// Host reads what the kubelet gets from cAdvisor about the machine: the
// root cgroup's (and the pods cgroup's) CPU and memory, the filesystems
// under a directory, the boot time and the pid limits. It reads cgroupfs
// and /proc directly, on cgroup v1 and v2.
type Host struct {
	// CgroupRoot is where cgroupfs is mounted; empty is /sys/fs/cgroup.
	CgroupRoot string
	// ProcRoot is the proc filesystem; empty is /proc.
	ProcRoot string
}

func (h Host) cgroupRoot() string {
	if h.CgroupRoot == "" {
		return "/sys/fs/cgroup"
	}
	return h.CgroupRoot
}

func (h Host) procRoot() string {
	if h.ProcRoot == "" {
		return "/proc"
	}
	return h.ProcRoot
}

// cgroupSample is one reading of a cgroup's CPU and memory, cAdvisor's
// ContainerStats as the kubelet's cadvisorInfoToCPUandMemoryStats reads it.
type cgroupSample struct {
	time time.Time
	// cpuNanoSeconds is the cumulative CPU time of the cgroup.
	cpuNanoSeconds uint64
	usageBytes     uint64
	workingSet     uint64
	rssBytes       uint64
	pageFaults     uint64
	majorFaults    uint64
	// limitBytes is the memory limit; 0 when unlimited. For the root
	// cgroup it is the machine's memory, as cAdvisor's root spec says.
	limitBytes uint64
	// cpuPSI, memoryPSI and ioPSI are the cgroup's pressure stall
	// information (cgroup v2's *.pressure files), zero where there are
	// none (cgroup v1, a kernel without PSI), as cAdvisor leaves them.
	cpuPSI, memoryPSI, ioPSI statsapi.PSIStats
}

// maxMemorySize is cAdvisor's bound above which a limit means "unlimited"
// (isMemoryUnlimited): cgroup v1 writes a page-rounded 2^63-1.
const maxMemorySize = uint64(1 << 62)

// unified reports whether the cgroupfs is cgroup v2 (one hierarchy).
func (h Host) unified() bool { return cm.Unified(h.cgroupRoot()) }

// cgroup reads the cgroup name ("/" for the root, "/kubepods" for the pods)
// at now. Matches what cAdvisor's raw handler gives the kubelet's
// GetCgroupStats: CPU usage from cpuacct.usage (v1) or cpu.stat usage_usec
// (v2), memory usage, and the working set as usage minus inactive file
// pages (cAdvisor's setMemoryStats), both floored at 0.
func (h Host) cgroup(name string, now time.Time) (cgroupSample, error) {
	s := cgroupSample{time: now}
	root := name == "/"
	if h.unified() {
		dir := filepath.Join(h.cgroupRoot(), name)
		usec, err := keyedValue(filepath.Join(dir, "cpu.stat"), "usage_usec")
		switch {
		case err == nil:
			s.cpuNanoSeconds = usec * 1000
		case root:
			// Older kernels have no cpu.stat at the root.
			if s.cpuNanoSeconds, err = h.procStatCPU(); err != nil {
				return s, err
			}
		default:
			return s, err
		}
		stat, statErr := readKeyed(filepath.Join(dir, "memory.stat"))
		usage, err := readUint(filepath.Join(dir, "memory.current"))
		if err != nil && root {
			// The root has no memory.current: the machine's used memory,
			// as runc's statsFromMeminfo reports it.
			mi, miErr := h.meminfo()
			if miErr != nil {
				return s, miErr
			}
			usage, err = mi["MemTotal"]-mi["MemFree"], nil
			if statErr != nil {
				stat, statErr = map[string]uint64{"inactive_file": mi["Inactive(file)"], "anon": mi["AnonPages"]}, nil
			}
		}
		if err != nil {
			return s, err
		}
		if statErr != nil {
			return s, statErr
		}
		s.usageBytes = usage
		s.workingSet = subFloor(usage, stat["inactive_file"])
		s.rssBytes = stat["anon"]
		s.pageFaults, s.majorFaults = stat["pgfault"], stat["pgmajfault"]
		if !root {
			if v, err := readUint(filepath.Join(dir, "memory.max")); err == nil && v < maxMemorySize {
				s.limitBytes = v
			}
		}
		s.cpuPSI = readPSI(filepath.Join(dir, "cpu.pressure"))
		s.memoryPSI = readPSI(filepath.Join(dir, "memory.pressure"))
		s.ioPSI = readPSI(filepath.Join(dir, "io.pressure"))
	} else {
		cpu, err := h.v1File(name, "cpuacct.usage", "cpuacct", "cpu,cpuacct")
		if err != nil {
			return s, err
		}
		if s.cpuNanoSeconds, err = readUint(cpu); err != nil {
			return s, err
		}
		memDir := filepath.Join(h.cgroupRoot(), "memory", name)
		if s.usageBytes, err = readUint(filepath.Join(memDir, "memory.usage_in_bytes")); err != nil {
			return s, err
		}
		stat, err := readKeyed(filepath.Join(memDir, "memory.stat"))
		if err != nil {
			return s, err
		}
		s.workingSet = subFloor(s.usageBytes, stat["total_inactive_file"])
		s.rssBytes = stat["total_rss"]
		s.pageFaults, s.majorFaults = stat["total_pgfault"], stat["total_pgmajfault"]
		if !root {
			if v, err := readUint(filepath.Join(memDir, "memory.limit_in_bytes")); err == nil && v < maxMemorySize {
				s.limitBytes = v
			}
		}
	}
	if root {
		mi, err := h.meminfo()
		if err != nil {
			return s, err
		}
		s.limitBytes = mi["MemTotal"]
	}
	return s, nil
}

// readPSI parses a cgroup v2 pressure file ("some avg10=0.12 avg60=0.05
// avg300=0.01 total=12345", then a "full" line; total in microseconds,
// passed on as cAdvisor's runc reads it); what cannot be read is zero.
func readPSI(path string) statsapi.PSIStats {
	var psi statsapi.PSIStats
	data, err := os.ReadFile(path)
	if err != nil {
		return psi
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		var d *statsapi.PSIData
		switch fields[0] {
		case "some":
			d = &psi.Some
		case "full":
			d = &psi.Full
		default:
			continue
		}
		for _, kv := range fields[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "total":
				d.Total, _ = strconv.ParseUint(v, 10, 64)
			case "avg10":
				d.Avg10, _ = strconv.ParseFloat(v, 64)
			case "avg60":
				d.Avg60, _ = strconv.ParseFloat(v, 64)
			case "avg300":
				d.Avg300, _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	return psi
}

// v1File finds file of cgroup name in the first of the v1 hierarchies that
// has it (cpuacct is mounted alone or with cpu, depending on the distro).
func (h Host) v1File(name, file string, hierarchies ...string) (string, error) {
	var errs []error
	for _, hier := range hierarchies {
		p := filepath.Join(h.cgroupRoot(), hier, name, file)
		if _, err := os.Stat(p); err != nil {
			errs = append(errs, err)
			continue
		}
		return p, nil
	}
	return "", errors.Join(errs...)
}

// procStatCPU is the machine's CPU time from /proc/stat's cpu line, in
// nanoseconds (USER_HZ is 100 on every Linux architecture Go supports).
func (h Host) procStatCPU() (uint64, error) {
	path := filepath.Join(h.procRoot(), "stat")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("%s: no cpu line", path)
	}
	var ticks uint64
	// user nice system idle iowait irq softirq steal: all but idle and
	// iowait are time spent.
	for i, v := range f[1:9] {
		if i == 3 || i == 4 {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		ticks += n
	}
	return ticks * uint64(time.Second/100), nil
}

// meminfo reads /proc/meminfo in bytes.
func (h Host) meminfo() (map[string]uint64, error) {
	path := filepath.Join(h.procRoot(), "meminfo")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		f := strings.Fields(rest)
		if !ok || len(f) == 0 {
			continue
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			v *= 1024
		}
		out[name] = v
	}
	if _, ok := out["MemTotal"]; !ok {
		return nil, fmt.Errorf("%s: no MemTotal", path)
	}
	return out, nil
}

// bootTime is when the machine started, from /proc/stat's btime (the
// kubelet's util.GetBootTime).
func (h Host) bootTime() (time.Time, error) {
	v, err := keyedValue(filepath.Join(h.procRoot(), "stat"), "btime")
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(int64(v), 0), nil
}

// rlimit reads the pid limit and the number of tasks as the kubelet's
// pidlimit.Stats: the smaller of kernel.pid_max and kernel.threads-max,
// and the task count of /proc/loadavg.
func (h Host) rlimit() (maxPID, procs int64, err error) {
	maxPID = -1
	for _, name := range []string{"pid_max", "threads-max"} {
		v, err := readUint(filepath.Join(h.procRoot(), "sys", "kernel", name))
		if err != nil {
			return 0, 0, err
		}
		if maxPID < 0 || int64(v) < maxPID {
			maxPID = int64(v)
		}
	}
	path := filepath.Join(h.procRoot(), "loadavg")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(data))
	if len(f) < 4 {
		return 0, 0, fmt.Errorf("%s: %q", path, data)
	}
	_, total, _ := strings.Cut(f[3], "/")
	procs, err = strconv.ParseInt(total, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	return maxPID, procs, nil
}

// fsInfo is cAdvisor's FsInfo of a filesystem as the kubelet reads it.
type fsInfo struct {
	time                       time.Time
	capacity, available, usage uint64
	inodes, inodesFree         uint64
}

// dirFsInfo measures the filesystem holding dir (cAdvisor's GetDirFsInfo,
// RootFsInfo): capacity, what unprivileged users may still use, what is
// used, inodes.
func dirFsInfo(dir string, now time.Time) (fsInfo, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fsInfo{}, fmt.Errorf("statfs %s: %w", dir, err)
	}
	bsize := uint64(st.Bsize)
	return fsInfo{
		time:       now,
		capacity:   st.Blocks * bsize,
		available:  st.Bavail * bsize,
		usage:      (st.Blocks - st.Bfree) * bsize,
		inodes:     st.Files,
		inodesFree: st.Ffree,
	}, nil
}

// isTmpfs reports whether dir is on a tmpfs (an emptyDir with medium
// Memory), which is not the node's disk.
func isTmpfs(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// du is the disk usage of path and the inodes it holds, as the kubelet's
// volume.MetricsDu (du and find) measures them: allocated blocks.
func du(path string) (bytes, inodes uint64, err error) {
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		inodes++
		if st, ok := info.Sys().(*unix.Stat_t); ok {
			bytes += uint64(st.Blocks) * 512
		}
		return nil
	})
	return bytes, inodes, err
}

func subFloor(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

func readUint(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return maxMemorySize, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// readKeyed reads a "key value" file (memory.stat, cpu.stat).
func readKeyed(path string) (map[string]uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if v, err := strconv.ParseUint(f[1], 10, 64); err == nil {
			out[f[0]] = v
		}
	}
	return out, nil
}

func keyedValue(path, key string) (uint64, error) {
	m, err := readKeyed(path)
	if err != nil {
		return 0, err
	}
	v, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("%s: no %s", path, key)
	}
	return v, nil
}
