package server

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// allowedCPUs lists the CPUs this process may run on.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for cpu := 0; len(cpus) < set.Count(); cpu++ {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus, nil
}

// pinProcess confines this process to cpu, with GOMAXPROCS 1 to match.
// sched_setaffinity sets one thread, and a new thread inherits the mask of
// the thread that starts it, so every thread is set, again and again until
// a pass finds none it has not set.
func pinProcess(cpu int) error {
	runtime.GOMAXPROCS(1)
	var set unix.CPUSet
	set.Set(cpu)
	done := map[int]bool{}
	for {
		entries, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		fresh := 0
		for _, e := range entries {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("sched_setaffinity(%d, CPU %d): %w", tid, cpu, err)
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
}

// processTreeUsage returns what process pid has used, and the sum of what
// its descendants (its plugin children) have: CPU time (user and system)
// from /proc/PID/stat in clock ticks (10 ms at the usual 100 Hz), and
// read- and write-family syscalls from /proc/PID/io.
func processTreeUsage(pid int) (self, descendants procUsage, err error) {
	if self.cpu, err = procCPU(pid); err != nil {
		return procUsage{}, procUsage{}, err
	}
	if self.syscalls, err = procSyscalls(pid); err != nil {
		return procUsage{}, procUsage{}, err
	}
	kids, err := children(pid)
	if err != nil {
		return procUsage{}, procUsage{}, err
	}
	for _, k := range kids {
		s, d, err := processTreeUsage(k)
		if err != nil {
			continue // exited meanwhile
		}
		descendants = descendants.add(s).add(d)
	}
	return self, descendants, nil
}

// userHZ is the unit of /proc/PID/stat's times; Linux fixes it at 100 for
// user space on every architecture Go supports.
const userHZ = 100

func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// procSyscalls is the number of read- and write-family syscalls (syscr and
// syscw of /proc/PID/io) process pid's threads have made, exited ones
// included.
func procSyscalls(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	var n int64
	found := 0
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "syscr" && k != "syscw") {
			continue
		}
		c, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/io: %s: %w", pid, k, err)
		}
		n += c
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("/proc/%d/io: no syscr and syscw", pid)
	}
	return n, nil
}

// children lists the child processes of pid, over all its threads.
func children(pid int) ([]int, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// threadCPUs returns the distinct Cpus_allowed_list of pid's threads and
// of its descendants' threads, to show that pinning took.
func threadCPUs(pid int) (string, error) {
	seen := map[string]bool{}
	var walk func(pid int) error
	walk = func(pid int) error {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return err
		}
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
					seen[strings.TrimSpace(v)] = true
				}
			}
		}
		kids, err := children(pid)
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := walk(k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(pid); err != nil {
		return "", err
	}
	var out []string
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return strings.Join(out, " "), nil
}
