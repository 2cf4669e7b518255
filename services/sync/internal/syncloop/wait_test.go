package syncloop

import (
	"testing"
	"time"
)

// waitFor polls cond until it holds, failing the test after 10 s. It is the
// package's one way for a test to wait for something another goroutine does.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting until %s", what)
		case <-tick.C:
		}
	}
}
