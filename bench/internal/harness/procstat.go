package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. It is
// 100 on every Linux architecture Go supports; reading it needs sysconf
// (cgo), which the harness avoids.
const clockTicks = 100

// procSample is one reading of a process's CPU time and memory.
type procSample struct {
	cpuTicks uint64 // utime + stime
	rssKiB   uint64 // VmRSS
	hwmKiB   uint64 // VmHWM, the peak RSS since the process started
}

// readProc reads /proc/PID/stat and /proc/PID/status.
func readProc(pid int) (procSample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, err
	}
	ticks, err := parseStat(stat)
	if err != nil {
		return procSample{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procSample{}, err
	}
	rss, hwm, err := parseStatus(status)
	if err != nil {
		return procSample{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return procSample{cpuTicks: ticks, rssKiB: rss, hwmKiB: hwm}, nil
}

// parseStat returns utime+stime from the contents of /proc/PID/stat. The
// command name (field 2) may hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(b []byte) (uint64, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, fmt.Errorf("no ')' after the command name")
	}
	// After ") " come field 3 (state) onwards; utime is field 14, stime 15.
	fields := bytes.Fields(b[end+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(fields))
	}
	utime, err := strconv.ParseUint(string(fields[11]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("utime: %w", err)
	}
	stime, err := strconv.ParseUint(string(fields[12]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stime: %w", err)
	}
	return utime + stime, nil
}

// parseStatus returns VmRSS and VmHWM in KiB from /proc/PID/status.
func parseStatus(b []byte) (rss, hwm uint64, err error) {
	var haveRSS, haveHWM bool
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		key, val, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		var dst *uint64
		switch string(key) {
		case "VmRSS":
			dst, haveRSS = &rss, true
		case "VmHWM":
			dst, haveHWM = &hwm, true
		default:
			continue
		}
		f := bytes.Fields(val) // "12345 kB"
		if len(f) == 0 {
			return 0, 0, fmt.Errorf("%s: empty value", key)
		}
		if *dst, err = strconv.ParseUint(string(f[0]), 10, 64); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", key, err)
		}
	}
	if !haveRSS || !haveHWM {
		return 0, 0, fmt.Errorf("VmRSS or VmHWM missing (a zombie or kernel thread?)")
	}
	return rss, hwm, nil
}

// Usage is what one process used over a window.
type Usage struct {
	// CPUCores is CPU time (user+system) divided by wall time.
	CPUCores float64 `json:"cpu_cores"`
	// CPUSeconds is the CPU time spent in the window.
	CPUSeconds float64 `json:"cpu_seconds"`
	// PeakRSSMiB is the largest VmRSS sampled in the window.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// HWMMiB is VmHWM at the end of the window: the peak RSS over the
	// process's whole life, burst included.
	HWMMiB float64 `json:"hwm_mib"`
}

// sampleWindow samples every process each interval for window and returns
// each one's usage, keyed by name.
func sampleWindow(ctx context.Context, procs map[string]int, window, interval time.Duration) (map[string]Usage, error) {
	first := make(map[string]procSample, len(procs))
	peak := make(map[string]uint64, len(procs))
	var last map[string]procSample
	read := func() (map[string]procSample, error) {
		out := make(map[string]procSample, len(procs))
		for name, pid := range procs {
			s, err := readProc(pid)
			if err != nil {
				return nil, fmt.Errorf("%s (pid %d): %w", name, pid, err)
			}
			out[name] = s
			peak[name] = max(peak[name], s.rssKiB)
		}
		return out, nil
	}
	start := time.Now()
	s, err := read()
	if err != nil {
		return nil, err
	}
	first, last = s, s
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for time.Since(start) < window {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		if last, err = read(); err != nil {
			return nil, err
		}
	}
	wall := time.Since(start).Seconds()
	out := make(map[string]Usage, len(procs))
	for name := range procs {
		cpu := float64(last[name].cpuTicks-first[name].cpuTicks) / clockTicks
		out[name] = Usage{
			CPUCores:   cpu / wall,
			CPUSeconds: cpu,
			PeakRSSMiB: float64(peak[name]) / 1024,
			HWMMiB:     float64(last[name].hwmKiB) / 1024,
		}
	}
	return out, nil
}

// cpuSeconds reads the CPU time each process has used so far.
func cpuSeconds(procs map[string]int) map[string]float64 {
	out := make(map[string]float64, len(procs))
	for name, pid := range procs {
		if s, err := readProc(pid); err == nil {
			out[name] = float64(s.cpuTicks) / clockTicks
		}
	}
	return out
}

// selfCPUSeconds is the CPU time (user+system) this process, the harness,
// has used so far. On a small machine the harness competes with the
// processes it measures (it applies the pods and decodes every watch
// event), so a report must say how much it took.
func selfCPUSeconds() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime), nil
}

// harnessCPU measures the harness's own CPU time from its creation to
// done; a failed reading gives 0 (and the caller's note), not a wrong figure.
type harnessCPU struct {
	start float64
	err   error
}

func startHarnessCPU() harnessCPU {
	s, err := selfCPUSeconds()
	return harnessCPU{start: s, err: err}
}

// done returns the CPU seconds used since startHarnessCPU.
func (h harnessCPU) done() (float64, error) {
	if h.err != nil {
		return 0, h.err
	}
	end, err := selfCPUSeconds()
	if err != nil {
		return 0, err
	}
	return end - h.start, nil
}
