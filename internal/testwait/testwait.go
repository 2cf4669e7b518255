// Package testwait is how unit tests wait for what another goroutine does:
// by polling a condition, never by sleeping a guessed duration.
package testwait

import (
	"testing"
	"time"
)

// For polls cond every 2 ms until it holds, failing t after 10 s. Inside a
// testing/synctest bubble the polling runs on the bubble's fake clock.
func For(t testing.TB, what string, cond func() bool) {
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
