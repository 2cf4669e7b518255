package probe

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedExecer answers ExecSync from a fixed script; block makes it wait
// for ctx instead, as a hung command would.
type scriptedExecer struct {
	stdout, stderr string
	code           int32
	err            error
	block          bool

	mu    sync.Mutex
	calls []execCall
}

type execCall struct {
	id      string
	cmd     []string
	timeout time.Duration
}

var _ Execer = (*scriptedExecer)(nil)

func (e *scriptedExecer) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	e.mu.Lock()
	e.calls = append(e.calls, execCall{id: id, cmd: cmd, timeout: timeout})
	e.mu.Unlock()
	if e.block {
		<-ctx.Done()
		return nil, nil, 0, ctx.Err()
	}
	return []byte(e.stdout), []byte(e.stderr), e.code, e.err
}

func TestExec(t *testing.T) {
	boom := errors.New("container not found")
	tests := []struct {
		desc       string
		execer     *scriptedExecer
		timeout    time.Duration
		wantResult Result
		wantOutput string
		wantErr    error
	}{
		{desc: "exit 0 succeeds with stdout then stderr", execer: &scriptedExecer{stdout: "out;", stderr: "err"},
			timeout: time.Second, wantResult: Success, wantOutput: "out;err"},
		{desc: "non-zero exit fails with the output", execer: &scriptedExecer{stdout: "not yet", code: 1},
			timeout: time.Second, wantResult: Failure, wantOutput: "not yet"},
		{desc: "a hung command fails with the kubelet's timeout message", execer: &scriptedExecer{block: true},
			timeout: 20 * time.Millisecond, wantResult: Failure, wantOutput: `command "cat /tmp/healthy" timed out`},
		{desc: "a runtime error is unknown with the error", execer: &scriptedExecer{err: boom},
			timeout: time.Second, wantResult: Unknown, wantErr: boom},
		{desc: "a runtime error wrapping DeadlineExceeded is a timeout", execer: &scriptedExecer{err: context.DeadlineExceeded},
			timeout: time.Second, wantResult: Failure, wantOutput: `command "cat /tmp/healthy" timed out`},
		{desc: "output is cut at 10 KiB", execer: &scriptedExecer{stdout: strings.Repeat("x", 20000), code: 2},
			timeout: time.Second, wantResult: Failure, wantOutput: strings.Repeat("x", 10240)},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			res, out, err := Exec(context.Background(), tc.execer, "c1", []string{"cat", "/tmp/healthy"}, tc.timeout)
			if res != tc.wantResult || out != tc.wantOutput || !errors.Is(err, tc.wantErr) {
				t.Fatalf("Exec = (%q, %.40q, %v), want (%q, %.40q, %v)", res, out, err, tc.wantResult, tc.wantOutput, tc.wantErr)
			}
			if len(tc.execer.calls) != 1 || tc.execer.calls[0].id != "c1" || tc.execer.calls[0].timeout != tc.timeout {
				t.Fatalf("calls = %+v, want one call on c1 with timeout %v", tc.execer.calls, tc.timeout)
			}
		})
	}
}

func TestRunInContainerErrors(t *testing.T) {
	_, err := RunInContainer(context.Background(), &scriptedExecer{stderr: "no such file", code: 127}, "c1", []string{"sh", "-c", "x"}, 0)
	var exitErr *ExitError
	if !errors.As(err, &exitErr) || exitErr.Code != 127 {
		t.Fatalf("err = %v, want an ExitError with code 127", err)
	}
	if want := "command 'sh -c x' exited with 127: no such file"; err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
	_, err = RunInContainer(context.Background(), &scriptedExecer{block: true}, "c1", []string{"sleep", "9"}, 10*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout err = %v, want one that Is DeadlineExceeded", err)
	}
}
