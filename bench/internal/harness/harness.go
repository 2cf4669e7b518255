// Package harness is splitlet's pod-start benchmark: it starts
// splitlet-gateway (fake backend), splitlet-admission and splitlet-sync as
// separate processes, applies N pods through the PodService API and
// measures, per pod, Apply to all containers running; then the processes'
// CPU and memory over a steady-state window; then how long deleting every
// pod takes. Optionally it runs the real kubelet, standalone with static
// pods, against the same gateway and measures the same figures.
//
// Usage sketch:
//
//	cfg := harness.Config{BinDir: "bin", Ns: []int{110, 1000}, Steady: time.Minute}
//	results, err := harness.Run(ctx, cfg, os.Stdout)
//	harness.WriteJSON("results.json", harness.NewReport(cfg, results))
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/splitlet/splitlet/internal/logctx"
	"go.uber.org/zap"
)

// Config is one bench invocation.
type Config struct {
	// BinDir holds splitlet-gateway, splitlet-admission and splitlet-sync.
	BinDir string
	// Ns are the pod counts; each gets fresh processes and directories.
	Ns []int
	// Steady is the steady-state sampling window after the burst.
	Steady time.Duration
	// Latency is added by the fake backend to every CRI call (0: none).
	Latency time.Duration
	// Concurrency bounds the Apply calls in flight; Batch is how many pods
	// one Apply carries (a multi-document manifest).
	Concurrency int
	Batch       int
	// Timeout bounds the wait for all pods running, and for all gone.
	Timeout time.Duration
	// Kubelet is a kubelet binary for the side-by-side run ("" skips it);
	// KubeletNs are its pod counts.
	Kubelet   string
	KubeletNs []int
	// KubeletArgs are appended to the kubelet's command line (a later
	// flag wins, so "--v=4" raises its log level).
	KubeletArgs []string
	// SyncArgs, GatewayArgs and AdmissionArgs are flags added to each
	// splitlet process's command line (e.g. --resync-interval=1m).
	SyncArgs, GatewayArgs, AdmissionArgs []string
	// KubeletPodsInterval is how often the kubelet's /pods is read for
	// the status point (0: 1 ms per pod, at least 100 ms; negative: not
	// read, no status point).
	KubeletPodsInterval time.Duration
	// NodeIP is the node's address in the node network (SetupNodeNet);
	// the kubelet gets it as --node-ip. Empty: the machine's own network.
	NodeIP string
	// WorkDir is where per-run directories are made ("" = os.TempDir()).
	// Keep leaves them (with the processes' logs) after the run.
	WorkDir string
	Keep    bool
	// ProfileDir, when set, runs the processes with --profiling and saves a
	// CPU profile of each, ProfileSeconds long and taken from the first
	// Apply of each burst, as ProfileDir/<process>-<n>.pprof.
	ProfileDir     string
	ProfileSeconds int
	// TracingEndpoint, when set, is every process's --tracing-endpoint
	// (sampling 1.0): the cost of tracing on.
	TracingEndpoint string
}

func (c *Config) validate() error {
	switch {
	case len(c.Ns) == 0 && (c.Kubelet == "" || len(c.KubeletNs) == 0):
		return errors.New("no pod counts to run")
	case c.Concurrency < 1 || c.Batch < 1:
		return errors.New("concurrency and batch must be at least 1")
	case c.Steady < 0 || c.Latency < 0 || c.Timeout <= 0:
		return errors.New("durations must not be negative, and the timeout must be positive")
	}
	for _, n := range append(append([]int(nil), c.Ns...), c.KubeletNs...) {
		if n < 1 {
			return fmt.Errorf("pod count %d: must be at least 1", n)
		}
	}
	return nil
}

// Result is one system at one N.
type Result struct {
	System  string `json:"system"` // "splitlet" or "kubelet"
	N       int    `json:"n"`
	Latency string `json:"cri_latency"`
	// StartWatch is the status point: Apply start (manifest written, for
	// the kubelet) to all containers running in the pod's status, seen
	// through PodService.Watch for splitlet and the kubelet's /pods on its
	// read-only port (kubeletPodsInterval) for the kubelet. StartCRI is the
	// same start to the container's start event at the gateway, for both.
	StartWatch *Summary `json:"start_watch,omitempty"`
	StartCRI   Summary  `json:"start_cri"`
	// BurstSeconds is the first Apply to the last pod running (the
	// status point's view: the Watch for splitlet, /pods for the kubelet);
	// PodsPerSec is N over it.
	BurstSeconds float64 `json:"burst_seconds"`
	PodsPerSec   float64 `json:"pods_per_sec"`
	// BurstCPUSeconds is each process's CPU time during the burst.
	BurstCPUSeconds map[string]float64 `json:"burst_cpu_seconds"`
	// HarnessBurstCPUSeconds is the harness's own CPU time (user+system,
	// getrusage RUSAGE_SELF) over the same burst: applying the pods and
	// following the watch and the CRI events. It shares the machine's
	// cores with the processes measured, so their pods/s is only as good
	// as what it left them.
	HarnessBurstCPUSeconds float64 `json:"harness_burst_cpu_seconds"`
	// Profiles are the CPU profiles taken during the burst (-profile).
	Profiles []string `json:"profiles,omitempty"`
	// Steady is each process's usage over the window, and Total their sum
	// (HWM summed too, an upper bound of the peak together).
	SteadySeconds float64          `json:"steady_seconds"`
	Steady        map[string]Usage `json:"steady"`
	SteadyTotal   Usage            `json:"steady_total"`
	// DeleteSeconds is the first Delete to the last pod gone from the
	// watch (splitlet); DeleteCRISeconds to the last container stopped.
	DeleteSeconds    float64 `json:"delete_seconds,omitempty"`
	DeleteCRISeconds float64 `json:"delete_cri_seconds"`
	// Errors are failures that did not stop the run (failed Apply calls,
	// pods that never got running).
	Errors []string `json:"errors,omitempty"`
	// Notes say how the run differed from the full setup.
	Notes []string `json:"notes,omitempty"`
	Dir   string   `json:"dir,omitempty"`
}

// Run benchmarks splitlet at every N, then the kubelet, printing each
// result's table rows to w as it completes. A failed run is recorded in
// its Result's Errors and the next one goes ahead.
func Run(ctx context.Context, cfg Config, w io.Writer) ([]Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = os.TempDir()
	}
	var results []Result
	printHeader(w)
	for _, n := range cfg.Ns {
		r := runSplitlet(ctx, cfg, n)
		printResult(w, r)
		results = append(results, r)
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
	}
	if cfg.Kubelet != "" {
		for _, n := range cfg.KubeletNs {
			r := runKubelet(ctx, cfg, n)
			printResult(w, r)
			results = append(results, r)
			if ctx.Err() != nil {
				return results, ctx.Err()
			}
		}
	}
	return results, nil
}

// runDir makes the per-run directory.
func runDir(cfg Config, system string, n int) (string, error) {
	return os.MkdirTemp(cfg.WorkDir, fmt.Sprintf("splitlet-bench-%s-%d-", system, n))
}

// cleanup removes the run's directory unless asked to keep it or the run
// had errors (its logs are there).
func cleanup(ctx context.Context, cfg Config, r *Result) {
	if cfg.Keep || r.Dir == "" || len(r.Errors) > 0 {
		return
	}
	if err := os.RemoveAll(r.Dir); err != nil {
		logctx.From(ctx).Warn("remove run directory", zap.String("dir", r.Dir), zap.Error(err))
	}
	r.Dir = ""
}

func (r *Result) fail(err error) {
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
}

// sumUsage adds up the processes' usage.
func sumUsage(m map[string]Usage) Usage {
	var t Usage
	for _, u := range m {
		t.CPUCores += u.CPUCores
		t.CPUSeconds += u.CPUSeconds
		t.PeakRSSMiB += u.PeakRSSMiB
		t.HWMMiB += u.HWMMiB
	}
	return t
}

func diffCPU(after, before map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(after))
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}

// recordHarnessCPU sets r.HarnessBurstCPUSeconds from h, noting a failed
// reading instead of failing the run.
func recordHarnessCPU(r *Result, h harnessCPU) {
	cpu, err := h.done()
	if err != nil {
		r.Notes = append(r.Notes, "harness CPU not measured: "+err.Error())
		return
	}
	r.HarnessBurstCPUSeconds = cpu
}
