package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// process is one started binary, its output going to a log file in the
// run's directory so a failed run can be read afterwards.
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
	log  string
	// debugURL serves /debug/pprof/ when the process runs with
	// --profiling ("" otherwise).
	debugURL string
}

// startProcess starts path with args; stdout and stderr go to dir/name.log.
func startProcess(ctx context.Context, dir, name, path string, args ...string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so an interrupted bench does not leave the
	// terminal's signals to reach it twice.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	logFrom(ctx).Debug("started", zap.String("process", name), zap.Int("pid", cmd.Process.Pid), zap.Strings("args", args))
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports an error if the process has already ended; a bench must
// not measure a process that died.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%v); see %s", p.name, p.err, p.log)
	default:
		return nil
	}
}

// stop sends SIGTERM and waits up to grace, then kills.
func (p *process) stop(grace time.Duration) {
	if p.exited() != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitReady polls check until it succeeds, the process exits or timeout.
func (p *process) waitReady(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if err := p.exited(); err != nil {
			return err
		}
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %v: %w (log: %s)", p.name, timeout, last, p.log)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stopAll stops procs in the reverse of their start order (sync before the
// gateway it calls), each with grace before it is killed.
func stopAll(procs []*process, grace time.Duration) {
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop(grace)
	}
}

// httpOK is a readiness check: GET url answers 200.
func httpOK(url string) func(context.Context) error {
	return func(ctx context.Context) error {
		resp, err := httpGet(ctx, url)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
}

// httpGet GETs url and fails unless it answers 200; the caller closes the
// body.
func httpGet(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp, nil
}

// freePort returns a loopback TCP port nobody listens on now. Another
// process could take it before ours binds; on a bench machine that is rare
// and shows as a failed start.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("listener address is not TCP")
	}
	return addr.Port, nil
}
