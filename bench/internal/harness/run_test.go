package harness

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRunSmall runs the whole harness against the real binaries at a few
// pods. It needs them built: SPLITLET_BENCH_BIN=$PWD/../bin (make build).
func TestRunSmall(t *testing.T) {
	bin := os.Getenv("SPLITLET_BENCH_BIN")
	if bin == "" {
		t.Skip("SPLITLET_BENCH_BIN (a directory with splitlet-gateway, -admission and -sync) is not set")
	}
	if _, err := os.Stat(filepath.Join(bin, "splitlet-sync")); err != nil {
		t.Skipf("no splitlet-sync in SPLITLET_BENCH_BIN: %v", err)
	}
	cfg := Config{BinDir: bin, Ns: []int{5}, Steady: 2 * time.Second, Concurrency: 1, Batch: 1,
		Timeout: 30 * time.Second, WorkDir: t.TempDir()}
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
}
