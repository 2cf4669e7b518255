package stack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrExited is wrapped by the errors of a Process that has ended.
var ErrExited = errors.New("process exited")

// Process is one started binary. Its stdout and stderr go to LogPath, which
// is appended to across restarts so a failed test can read the whole story.
type Process struct {
	Name    string   // short name: gateway, admission, sync
	Path    string   // the binary
	Args    []string // its flags, the same on every restart
	LogPath string

	// ready is the health check Start and Restart wait on.
	ready Check
	// pidFile, when set, is rewritten with the pid at every start, so that
	// a stack whose processes were restarted can still be stopped by its
	// pid files (StopDetached) after its launcher died.
	pidFile string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error // the Wait result, set before done is closed
}

// Check reports nil once a process is ready to serve.
type Check func(ctx context.Context) error

// newProcess describes a process without starting it.
func newProcess(name, path, logPath string, ready Check, args ...string) *Process {
	return &Process{Name: name, Path: path, Args: args, LogPath: logPath, ready: ready}
}

// StartProcess starts a binary that is not one of the stack's (the kubelet
// beside it in the bench) with the same log, health and stop handling, and
// waits up to timeout for ready (nil: no wait). On a failed wait the
// process is stopped.
func StartProcess(ctx context.Context, name, path, logPath string, ready Check, timeout time.Duration, args ...string) (*Process, error) {
	p := newProcess(name, path, logPath, ready, args...)
	if err := p.start(); err != nil {
		return nil, err
	}
	if err := p.WaitReady(ctx, timeout); err != nil {
		p.Stop(5 * time.Second)
		return nil, err
	}
	return p, nil
}

// start runs the binary in its own process group, so a Ctrl-C meant for
// the launcher does not reach the processes twice: the launcher stops them
// itself, in order.
func (p *Process) start() error {
	out, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.Path, p.Args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("start %s: %w", p.Name, err)
	}
	if p.pidFile != "" {
		if err := os.WriteFile(p.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			out.Close()
			return fmt.Errorf("start %s: %w", p.Name, err)
		}
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.err = cmd, done, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		out.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

// Pid is the process id of the current run (0 before the first start).
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Done is closed when the current run ends.
func (p *Process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Exited returns an error wrapping ErrExited once the current run has
// ended, nil while it runs.
func (p *Process) Exited() error {
	p.mu.Lock()
	done, err := p.done, p.err
	p.mu.Unlock()
	if done == nil {
		return fmt.Errorf("%s: %w (never started)", p.Name, ErrExited)
	}
	select {
	case <-done:
		p.mu.Lock()
		err = p.err
		p.mu.Unlock()
		return fmt.Errorf("%s: %w (%v); log %s", p.Name, ErrExited, err, p.LogPath)
	default:
		return nil
	}
}

// WaitReady polls the process's health check until it passes, the process
// exits, or timeout passes; the error then says which and carries the end of
// the log.
func (p *Process) WaitReady(ctx context.Context, timeout time.Duration) error {
	if p.ready == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := p.Exited(); err != nil {
			return fmt.Errorf("%w\n%s", err, p.Tail(30))
		}
		last := p.ready(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v: %w; log %s\n%s", p.Name, timeout, last, p.LogPath, p.Tail(30))
		case <-tick.C:
		}
	}
}

// Stop sends SIGTERM and waits up to grace for the process to end, then
// kills it. Stopping a process that has ended does nothing.
func (p *Process) Stop(grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || p.Exited() != nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		_ = cmd.Process.Kill()
		<-done
	}
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || p.Exited() != nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart starts the binary again with the same flags and log once the
// current run has ended (after Stop or Kill, or a crash), and waits until
// it is ready.
func (p *Process) Restart(ctx context.Context, timeout time.Duration) error {
	if p.Exited() == nil {
		return fmt.Errorf("restart %s: still running (pid %d); Stop or Kill it first", p.Name, p.Pid())
	}
	if err := p.start(); err != nil {
		return err
	}
	return p.WaitReady(ctx, timeout)
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	data, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Sprintf("(log %s: %v)", p.LogPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// pidRunning reports whether pid runs a binary whose command line holds
// name; the name check keeps a recycled pid from being taken for ours.
func pidRunning(pid int, name string) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte(name))
}

// stopPid sends SIGTERM to pid if it runs name, waits up to grace, then
// kills it; it reports whether the process was running.
func stopPid(pid int, name string, grace time.Duration) bool {
	if !pidRunning(pid, name) {
		return false
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if !pidRunning(pid, name) {
			return true
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return true
		}
	}
	return true
}

// StopPid stops a process that a detached launcher left running, by the
// pid it recorded: SIGTERM if pid still runs a binary whose command line
// holds name, SIGKILL after grace. It reports whether the process ran.
func StopPid(pid int, name string, grace time.Duration) bool { return stopPid(pid, name, grace) }
