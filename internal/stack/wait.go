package stack

import "time"

// TB is the part of testing.TB WaitFor uses, so that this package does not
// import testing into the commands built on it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// WaitFor polls cond until it holds, and fails t when timeout passes
// first, with what and cond's last message. It polls every 10 ms at first,
// then less often, up to every 200 ms: a quick condition is seen at once,
// and a slow one (an API object, a runtime) is not asked a hundred times a
// second. Every test harness waits on processes, API objects and runtimes
// with it, never on a sleep.
func WaitFor(t TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	interval := 10 * time.Millisecond
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, msg)
			return
		}
		<-timer.C
		interval = min(2*interval, 200*time.Millisecond)
		timer.Reset(interval)
	}
}
