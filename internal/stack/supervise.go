package stack

import (
	"context"
	"sync"
	"time"
)

// Backoff is how long Supervise waits before restarting a process that
// ended: Initial, doubled after every restart up to Max, and back to
// Initial once a run has lasted ResetAfter. It is the shape of the
// kubelet's container restart back-off (10 s doubling to 5 min, forgotten
// after twice the maximum of running), with shorter figures for a stack on
// one machine.
type Backoff struct {
	Initial, Max, ResetAfter time.Duration
}

// DefaultBackoff is `make run`'s: 1 s, doubling to 1 min, reset after 2 min
// up.
var DefaultBackoff = Backoff{Initial: time.Second, Max: time.Minute, ResetAfter: 2 * time.Minute}

// Restart is what Supervise reports for each restart it made.
type Restart struct {
	Process *Process
	// Exit is how the run ended: Exited's error, which names the log.
	Exit error
	// Delay is the wait before this restart.
	Delay time.Duration
	// Err is nil once the new run is ready; otherwise why not (the run
	// ended again, or did not pass its health check in StartTimeout).
	Err error
}

// Supervise restarts any of the stack's processes that ends, with the same
// flags, state and log, after a back-off, until ctx ends; it then returns,
// and the caller stops the stack. A restarted sync finds its pods in its
// store, and the others are found again by the clients that dial them, so
// a crash loses no pod. report, if not nil, hears of every restart.
func (s *Stack) Supervise(ctx context.Context, b Backoff, report func(Restart)) {
	if report == nil {
		report = func(Restart) {}
	}
	var wg sync.WaitGroup
	for _, p := range s.Processes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.supervise(ctx, p, b, report)
		}()
	}
	wg.Wait()
}

// supervise is Supervise for one process.
func (s *Stack) supervise(ctx context.Context, p *Process, b Backoff, report func(Restart)) {
	delay := b.Initial
	for {
		started := time.Now()
		select {
		case <-ctx.Done():
			return
		case <-p.Done():
		}
		if time.Since(started) >= b.ResetAfter {
			delay = b.Initial
		}
		exit := p.Exited()
		for {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			err := p.Restart(ctx, s.cfg.StartTimeout)
			if ctx.Err() != nil {
				return
			}
			report(Restart{Process: p, Exit: exit, Delay: delay, Err: err})
			delay = min(2*delay, b.Max)
			if err == nil || p.Exited() == nil {
				// Ready, or running but not yet healthy: watch this run.
				break
			}
			exit = p.Exited()
		}
	}
}
