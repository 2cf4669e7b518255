package pluginhost

import "time"

// Restart back-off defaults. They are shorter than the kubelet's
// CrashLoopBackOff (10 s doubling to 5 min, pkg/kubelet/kuberuntime) because
// pods wait on admission; they still bound a crash-looping plugin to a
// handful of forks per minute.
const (
	DefaultRestartBackoff    = time.Second
	DefaultMaxRestartBackoff = time.Minute
)

// restartBackoff decides when a plugin may be started again. The first
// restart after a quiet period is immediate, so a plugin that crashed once
// costs one admission at most; each further restart within the period waits
// twice as long as the previous one, up to max. Like client-go's
// flowcontrol.Backoff, a plugin whose last start is older than twice max is
// treated as healthy again.
type restartBackoff struct {
	initial, max time.Duration

	lastStart time.Time
	steps     int // restarts since the plugin was last healthy
}

// wait is how long the next start must still wait at now; zero or less
// means it may start.
func (b *restartBackoff) wait(now time.Time) time.Duration {
	if b.lastStart.IsZero() {
		return 0
	}
	elapsed := now.Sub(b.lastStart)
	if elapsed >= 2*b.max {
		return 0
	}
	return b.delay(b.steps) - elapsed
}

// started records a start attempt at now, successful or not.
func (b *restartBackoff) started(now time.Time) {
	if !b.lastStart.IsZero() && now.Sub(b.lastStart) >= 2*b.max {
		b.steps = 0
	}
	if !b.lastStart.IsZero() {
		b.steps++
	}
	b.lastStart = now
}

func (b *restartBackoff) delay(steps int) time.Duration {
	if steps == 0 {
		return 0
	}
	d := b.initial
	for i := 1; i < steps && d < b.max; i++ {
		d *= 2
	}
	return min(d, b.max)
}
