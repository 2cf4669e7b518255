package main

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// runMainEnv makes the test binary behave as the pause binary, so the tests
// can signal a real process without building one.
const runMainEnv = "SPLITLET_PAUSE_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(run())
	}
	os.Exit(m.Run())
}

func TestPauseExitsZeroOnSignal(t *testing.T) {
	tests := []struct {
		desc string
		sig  syscall.Signal
	}{
		{desc: "SIGTERM from the runtime's stop", sig: syscall.SIGTERM},
		{desc: "SIGINT from a terminal", sig: syscall.SIGINT},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), runMainEnv+"=1")
			if err := cmd.Start(); err != nil {
				t.Fatalf("start pause: %v", err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()

			// The process must still be running: pause never exits on its own.
			select {
			case err := <-done:
				t.Fatalf("pause exited before any signal: %v", err)
			case <-time.After(200 * time.Millisecond):
			}
			// SIGCHLD must not end it either.
			if err := cmd.Process.Signal(syscall.SIGCHLD); err != nil {
				t.Fatalf("send SIGCHLD: %v", err)
			}
			select {
			case err := <-done:
				t.Fatalf("pause exited on SIGCHLD: %v", err)
			case <-time.After(100 * time.Millisecond):
			}

			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatalf("send %v: %v", tc.sig, err)
			}
			select {
			case err := <-done:
				var exitErr *exec.ExitError
				if errors.As(err, &exitErr) {
					t.Fatalf("pause exited with %v after %v, want status 0", exitErr, tc.sig)
				}
				if err != nil {
					t.Fatalf("wait: %v", err)
				}
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("pause did not exit within 10s of %v", tc.sig)
			}
		})
	}
}

func TestReapChildrenCollectsExitedChildren(t *testing.T) {
	// Start children and never Wait for them: they become zombies that only a
	// wait4 by their parent (this test process) removes.
	var want []int
	for range 3 {
		pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &syscall.ProcAttr{})
		if err != nil {
			t.Skipf("cannot start /bin/true to make a zombie: %v", err)
		}
		want = append(want, pid)
	}

	// The children exit on their own time: reap on every tick until all are
	// collected or the deadline passes.
	var got []int
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for got = reapChildren(); len(got) < len(want); got = append(got, reapChildren()...) {
		select {
		case <-deadline:
			t.Fatalf("reaped %v within 10s, want %v", got, want)
		case <-tick.C:
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("reaped %v, want %v", got, want)
	}
	if more := reapChildren(); len(more) != 0 {
		t.Fatalf("second reap returned %v, want nothing left", more)
	}
}
