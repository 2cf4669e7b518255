package harness

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitlet/splitlet/internal/stack"
)

// TestRunSmall runs the whole harness against the real binaries at a few
// pods, with profiling on. SPLITLET_BENCH_BIN names a directory of built
// binaries (make build's bin/); without it the test builds them.
func TestRunSmall(t *testing.T) {
	bin := os.Getenv("SPLITLET_BENCH_BIN")
	if bin == "" {
		var err error
		if bin, err = stack.Build(t.Context(), t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(bin, "splitlet-sync")); err != nil {
		t.Fatalf("no splitlet-sync in %s: %v", bin, err)
	}
	profiles := t.TempDir()
	cfg := Config{BinDir: bin, Ns: []int{5}, Steady: 2 * time.Second, Concurrency: 1, Batch: 1,
		Timeout: 30 * time.Second, WorkDir: t.TempDir(), ProfileDir: profiles, ProfileSeconds: 1}
	results, err := Run(t.Context(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 {
		t.Fatalf("%d results, want 1", len(results))
	}
	r := results[0]
	if len(r.Errors) > 0 {
		t.Fatalf("run errors (logs in %s): %v", r.Dir, r.Errors)
	}
	if r.StartWatch == nil || r.StartWatch.Count != 5 || r.StartCRI.Count != 5 {
		t.Errorf("start counts: watch %+v, cri %+v; want 5 each", r.StartWatch, r.StartCRI)
	}
	// The runtime sees the container start before sync reports it.
	if r.StartWatch != nil && r.StartCRI.P50 > r.StartWatch.P50 {
		t.Errorf("CRI p50 %.1f ms after the watch's %.1f ms", r.StartCRI.P50, r.StartWatch.P50)
	}
	if r.PodsPerSec <= 0 || r.DeleteSeconds <= 0 {
		t.Errorf("pods/s %.1f, delete %.2f s: want both positive", r.PodsPerSec, r.DeleteSeconds)
	}
	for _, name := range []string{"gateway", "admission", "sync"} {
		if u, ok := r.Steady[name]; !ok || u.PeakRSSMiB <= 0 {
			t.Errorf("steady usage of %s = %+v (present %v), want a positive RSS", name, u, ok)
		}
	}
	// A burst and a steady-window CPU profile and a heap profile of each
	// of the three processes.
	written := map[string]bool{}
	for _, p := range r.Profiles {
		written[filepath.Base(p)] = true
	}
	for _, name := range []string{"gateway", "admission", "sync"} {
		for _, f := range []string{name + "-5.pprof", name + "-5-steady.pprof", name + "-5-heap.pprof"} {
			if !written[f] {
				t.Errorf("no %s among the profiles %v", f, r.Profiles)
			}
		}
	}
	if len(r.Profiles) != 9 {
		t.Errorf("profiles %v, want a burst, a steady and a heap one for each of the three processes", r.Profiles)
	}
}
