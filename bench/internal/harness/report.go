package harness

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Report is the JSON file: the machine, the configuration and every result.
type Report struct {
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	Host        Host      `json:"host"`
	Concurrency int       `json:"concurrency"`
	Batch       int       `json:"batch"`
	Results     []Result  `json:"results"`
}

// Host describes the machine, including its load, since the bench shares it.
type Host struct {
	CPUs       int    `json:"cpus"`
	GoVersion  string `json:"go_version"`
	LoadBefore string `json:"loadavg_before"`
	LoadAfter  string `json:"loadavg_after"`
	// NodeNet is the network the processes ran in: "private" (the node
	// network, SetupNodeNet) or "host" (the machine's own).
	NodeNet string `json:"node_net,omitempty"`
}

// LoadAvg returns /proc/loadavg's first three fields.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// NewHost describes this machine now (LoadAfter is filled in later).
func NewHost() Host {
	return Host{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadBefore: LoadAvg()}
}

// WriteJSON writes a report (Report or CtrReport), indented, to path.
func WriteJSON(path string, rep any) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

const rowFormat = "%-8s %5s %6s | %8s %8s %8s %8s | %8s %8s | %7s %7s | %6s %8s | %7s %7s | %s\n"

func printHeader(w io.Writer) {
	fmt.Fprintf(w, rowFormat, "system", "N", "lat", "p50ms", "p90ms", "p99ms", "maxms",
		"cri-p50", "cri-p99", "burst-s", "pods/s", "cores", "rss-MiB", "del-s", "cri-del", "notes")
}

// printResult prints a result's row, then one row per process with its
// steady-state usage and its CPU time during the burst.
func printResult(w io.Writer, r Result) {
	var p50, p90, p99, pmax string
	if s := r.StartWatch; s != nil {
		p50, p90, p99, pmax = f1(s.P50), f1(s.P90), f1(s.P99), f1(s.Max)
	} else {
		p50, p90, p99, pmax = f1(r.StartCRI.P50), f1(r.StartCRI.P90), f1(r.StartCRI.P99), f1(r.StartCRI.Max)
	}
	notes := ""
	if len(r.Errors) > 0 {
		notes = fmt.Sprintf("%d error(s): %s", len(r.Errors), r.Errors[0])
	}
	fmt.Fprintf(w, rowFormat, r.System, fmt.Sprint(r.N), r.Latency, p50, p90, p99, pmax,
		f1(r.StartCRI.P50), f1(r.StartCRI.P99), f2(r.BurstSeconds), f1(r.PodsPerSec),
		f3(r.SteadyTotal.CPUCores), f1(r.SteadyTotal.PeakRSSMiB), f2(r.DeleteSeconds), f2(r.DeleteCRISeconds), notes)
	names := make([]string, 0, len(r.Steady))
	for name := range r.Steady {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		u := r.Steady[name]
		fmt.Fprintf(w, "    %-10s steady %.3f cores, peak RSS %.1f MiB (HWM %.1f MiB); burst CPU %.2f s\n",
			name, u.CPUCores, u.PeakRSSMiB, u.HWMMiB, r.BurstCPUSeconds[name])
	}
	if r.BurstCPUSeconds != nil {
		fmt.Fprintf(w, "    %-10s burst CPU %.2f s (this bench process, on the same cores)\n", "harness", r.HarnessBurstCPUSeconds)
	}
	for _, e := range r.Errors[min(1, len(r.Errors)):] {
		fmt.Fprintf(w, "    error: %s\n", e)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "    note: %s\n", n)
	}
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
func f2(v float64) string { return fmt.Sprintf("%.2f", v) }
func f3(v float64) string { return fmt.Sprintf("%.3f", v) }
