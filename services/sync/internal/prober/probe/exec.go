package probe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Execer runs a command in a running container and waits for it, as CRI
// ExecSync does. Sync implements it over the runtime-gateway's
// RuntimeService.ExecSync; tests script it.
//
// Error contract: a command that ran returns its exit code (zero or not)
// and a nil error. err is non-nil only when the command could not be run or
// waited for; when the command outlived timeout (or ctx expired) err wraps
// context.DeadlineExceeded. A zero timeout means no limit.
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
}

// ExitError is a command that ran and exited non-zero. It matches the
// error the kubelet's remote runtime client returns from ExecSync
// (utilexec.CodeExitError), message included.
type ExitError struct {
	Cmd    []string
	Code   int
	Stderr []byte
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("command '%s' exited with %d: %s", strings.Join(e.Cmd, " "), e.Code, e.Stderr)
}

// TimeoutError is a command that did not finish within its timeout. Its
// message is the kubelet's (remote runtime ExecSync's exec.NewTimeoutError).
type TimeoutError struct {
	Cmd     []string
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("command %q timed out", strings.Join(e.Cmd, " "))
}

// Unwrap lets errors.Is(err, context.DeadlineExceeded) see a timeout.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// RunInContainer runs cmd in the container and returns stdout followed by
// stderr. A non-zero exit is an *ExitError, a timeout a *TimeoutError; any
// other error comes from the Execer. Matches the kubelet's
// kubeGenericRuntimeManager.RunInContainer over the remote runtime's
// ExecSync. It is shared by exec probes and exec lifecycle hooks.
func RunInContainer(ctx context.Context, e Execer, containerID string, cmd []string, timeout time.Duration) ([]byte, error) {
	if timeout > 0 {
		// The kubelet's CRI client bounds the call by the same timeout it
		// hands the runtime, so a runtime that ignores it cannot hang us.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	stdout, stderr, code, err := e.ExecSync(ctx, containerID, cmd, timeout)
	output := append(append([]byte{}, stdout...), stderr...)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return output, &TimeoutError{Cmd: cmd, Timeout: timeout}
		}
		return output, err
	}
	if code != 0 {
		return output, &ExitError{Cmd: cmd, Code: int(code), Stderr: stderr}
	}
	return output, nil
}

// maxExecOutput is how much of a command's output an exec probe keeps, as
// the kubelet's exec prober (maxReadLength, 10 KiB).
const maxExecOutput = 10 * 1 << 10

// Exec runs an exec probe. Matches the kubelet's pkg/probe/exec
// Probe: exit 0 is success, a non-zero exit a failure whose output is the
// command's output, a timeout a failure (ExecProbeTimeout, GA), anything
// else unknown with the error.
func Exec(ctx context.Context, e Execer, containerID string, cmd []string, timeout time.Duration) (Result, string, error) {
	if e == nil {
		return Unknown, "", errors.New("exec probes are not supported: no Execer configured")
	}
	data, err := RunInContainer(ctx, e, containerID, cmd, timeout)
	if len(data) > maxExecOutput {
		data = data[:maxExecOutput]
	}
	if err != nil {
		var exitErr *ExitError
		if errors.As(err, &exitErr) {
			return Failure, string(data), nil
		}
		var timeoutErr *TimeoutError
		if errors.As(err, &timeoutErr) {
			return Failure, timeoutErr.Error(), nil
		}
		return Unknown, "", err
	}
	return Success, string(data), nil
}
