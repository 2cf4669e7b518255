package stack

import "time"

// TB is the part of testing.TB WaitFor uses, so that this package does not
// import testing into the commands built on it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// WaitFor polls cond every 200 ms until it holds, and fails t when timeout
// passes first, with what and cond's last message. The cluster tests wait
// on API objects and runtimes with it, never on a sleep.
func WaitFor(t TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, msg)
			return
		}
		<-tick.C
	}
}
