package fake

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criLogTimeFormat is the timestamp layout of CRI log lines (containerd's
// cio.NewCRILogger uses time.RFC3339Nano padded to fixed width).
const criLogTimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// formatLogLine renders one full ("F") stdout line in the CRI log format:
// `<timestamp> stdout F <line>`.
func formatLogLine(t time.Time, line string) string {
	return t.Format(criLogTimeFormat) + " stdout F " + line + "\n"
}

// writeLogLines appends lines to the CRI log file at p, creating it and its
// parent directories. With no lines it still creates the file, as a started
// container's log exists even when empty.
//
// The file is opened first and the directories made only when that fails:
// the kubelet (and sync) create the container's log directory before
// CreateContainer, so the common case costs one open and no stat; and
// nothing is written when there is nothing to write. Every
// StartContainer comes here, and these syscalls were most of the fake's
// own time in a burst of pod starts.
func writeLogLines(p string, t time.Time, lines []string) error {
	f, err := openLogFile(p)
	if err != nil {
		// As before the fast path: make the directories, then open, so a
		// failure reads the same whichever step it is.
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("create log directory: %w", err)
		}
		f, err = openLogFile(p)
	}
	if err != nil {
		return fmt.Errorf("failed to create and open log file: %w", err)
	}
	if len(lines) > 0 {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString(formatLogLine(t, l))
		}
		if _, err := f.WriteString(b.String()); err != nil {
			f.Close()
			return fmt.Errorf("write log file %q: %w", p, err)
		}
	}
	return f.Close()
}

// openLogFile opens p for appending, creating it, with a plain open(2)
// wrapped by os.NewFile. os.OpenFile would also try to add the file to the
// network poller: for a regular file that costs four fcntl calls and a
// failing epoll_ctl, more syscalls than the open itself, on every
// StartContainer.
func openLogFile(p string) (*os.File, error) {
	for {
		fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CLOEXEC, 0o640)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "open", Path: p, Err: err}
		}
		return os.NewFile(uintptr(fd), p), nil
	}
}

// ReopenContainerLog reopens a running container's log file: after the
// kubelet rotates it away, the file is created again. As containerd's
// ReopenContainerLog, a container that is not running is an error.
func (r *Runtime) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	if err := r.inject(ctx, "ReopenContainerLog"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	c, err := r.st.container(req.GetContainerId())
	if err != nil {
		r.mu.RUnlock()
		return nil, fmt.Errorf("failed to find container: %w", err)
	}
	running, logPath := c.state == runtimeapi.ContainerState_CONTAINER_RUNNING, c.logPath
	r.mu.RUnlock()
	if !running {
		return nil, fmt.Errorf("container is not running: %w", errdefs.ErrFailedPrecondition)
	}
	if logPath != "" {
		if err := writeLogLines(logPath, r.clock(), nil); err != nil {
			return nil, fmt.Errorf("failed to create and open log file: %w", err)
		}
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}
