package gctune

import (
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"testing"
)

// goal reads the collector's current heap goal.
func goal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// rss reads the process's resident memory from /proc.
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm to read resident memory from: %v", err)
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		t.Fatal(err)
	}
	return resident * int64(os.Getpagesize())
}

func TestApply(t *testing.T) {
	defer func() { ballast = nil }()
	t.Run("GOGC set: nothing", func(t *testing.T) {
		t.Setenv("GOGC", "100")
		Apply()
		if ballast != nil {
			t.Fatal("a ballast despite GOGC")
		}
	})
	t.Run("unset: the goal rises, resident memory does not", func(t *testing.T) {
		t.Setenv("GOGC", "")
		os.Unsetenv("GOGC")
		// No collection before Apply: memory it frees could be handed
		// to the ballast, and reused memory is zeroed, which touches it.
		goalBefore, rssBefore := goal(), rss(t)
		Apply()
		runtime.GC()
		if got := goal(); got < goalBefore+BallastBytes {
			t.Errorf("heap goal %d after the ballast, want at least %d (before %d + ballast)", got, goalBefore+BallastBytes, goalBefore)
		}
		if grew := rss(t) - rssBefore; grew > BallastBytes/4 {
			t.Errorf("resident memory grew %d bytes: the ballast's pages were touched", grew)
		}
	})
}
