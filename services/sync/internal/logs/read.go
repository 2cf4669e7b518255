package logs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/logctx"
)

// Options are PodLogOptions as they apply to one container's log file.
type Options struct {
	// Follow keeps reading as the container writes, until ctx is done or
	// ContainerExited says it stopped and the file is drained.
	Follow bool
	// TailLines, when set, starts at the last N (joined) lines; 0 shows none
	// (with Follow: only what comes next).
	TailLines *int64
	// SinceTime drops lines logged before it.
	SinceTime *time.Time
	// LimitBytes stops after writing this many bytes (timestamps included);
	// the last line may be cut.
	LimitBytes *int64
	// Timestamps prefixes each line with its RFC3339Nano time and a space.
	Timestamps bool
	// ContainerExited is asked, in follow mode, whenever the reader has
	// caught up with the file; true ends the follow after one more pass
	// to the end. Nil means "follow until ctx is done".
	ContainerExited func() bool
}

// readBufferSize is the bufio buffer over the log file.
const readBufferSize = 64 * 1024

// ReadLogs writes the container log at path to stdout and stderr according
// to opts. A nil writer deselects its stream: its lines are neither written
// nor counted by TailLines. Malformed lines are skipped (and logged at debug
// level), as the kubelet does.
//
// Errors: a missing file wraps errdefs.ErrNotFound; a write error from
// stdout or stderr is returned as is (wrapped); in follow mode, ctx's error
// when ctx ends it. Reaching LimitBytes, the end of the file without Follow,
// or a drained file after ContainerExited all return nil.
func ReadLogs(ctx context.Context, path string, opts Options, stdout, stderr io.Writer) error {
	log := logctx.From(ctx).With(zap.String("path", path))

	// The runtime may hand out a symlink (/var/log/containers/...); resolve
	// it once, like the kubelet, so rotation checks compare the real file.
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("log file %q: %w", path, errdefs.ErrNotFound)
		}
		return fmt.Errorf("resolve log file %q: %w", path, err)
	}
	path = resolved
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("log file %q: %w", path, errdefs.ErrNotFound)
		}
		return fmt.Errorf("open log file %q: %w", path, err)
	}
	rd := &reader{path: path, f: f, opts: opts, log: log, w: newLogWriter(stdout, stderr, opts)}
	defer func() { rd.f.Close() }()
	if rd.w.remain == 0 {
		return nil
	}
	return rd.run(ctx)
}

// reader is one ReadLogs call's state: the open file (which changes on
// rotation), the buffered reader over it and the offset read so far.
type reader struct {
	path string
	f    *os.File
	r    *bufio.Reader
	pos  int64
	opts Options
	log  *zap.Logger
	w    *logWriter

	follow    *waiter
	rotatedTo *os.File // the new file at path, opened once rotation is seen
	finalPass bool     // the container exited: read to the end once more
}

func (rd *reader) run(ctx context.Context) error {
	// Without follow, a tail stops where the file ended when findTailStart
	// looked, so lines written meanwhile do not lengthen it (the kubelet's
	// limitedMode, which counts lines instead).
	tailing := rd.opts.TailLines != nil && *rd.opts.TailLines >= 0
	limited := tailing && !rd.opts.Follow
	var end int64
	if tailing {
		fi, err := rd.f.Stat()
		if err != nil {
			return fmt.Errorf("stat log file %q: %w", rd.path, err)
		}
		end = fi.Size()
		start, err := findTailStart(rd.f, *rd.opts.TailLines, rd.w.selected)
		if err != nil {
			return fmt.Errorf("tail %d lines of %q: %w", *rd.opts.TailLines, rd.path, err)
		}
		if err := rd.seek(start); err != nil {
			return err
		}
	} else {
		rd.r = bufio.NewReaderSize(rd.f, readBufferSize)
	}
	defer func() {
		if rd.follow != nil {
			rd.follow.close()
		}
		if rd.rotatedTo != nil {
			rd.rotatedTo.Close()
		}
	}()

	for {
		if limited && rd.pos >= end {
			return rd.finish(nil)
		}
		if rd.opts.Follow && ctx.Err() != nil {
			return rd.finish(ctx.Err())
		}
		line, err := rd.r.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("read log file %q: %w", rd.path, err)
		}
		if err == io.EOF && rd.opts.Follow {
			done, err := rd.atEOF(ctx, line)
			if done || err != nil {
				return rd.finish(err)
			}
			continue
		}
		if err == io.EOF && len(line) == 0 {
			return rd.finish(nil)
		}
		rd.pos += int64(len(line))
		werr := rd.handle(line)
		if errors.Is(werr, errMaximumWrite) {
			return nil
		}
		if werr != nil {
			return werr
		}
		if err == io.EOF {
			// That was an unterminated last line, which the kubelet also
			// writes as it is.
			return rd.finish(nil)
		}
	}
}

// handle parses and writes one line; errMaximumWrite comes back unwrapped.
func (rd *reader) handle(line []byte) error {
	var msg logMessage
	if err := parseCRILog(line, &msg); err != nil {
		rd.log.Debug("skipping malformed log line", zap.Error(err), zap.ByteString("line", line))
		return nil
	}
	err := rd.w.write(&msg)
	if err != nil && !errors.Is(err, errMaximumWrite) {
		return fmt.Errorf("write log line: %w", err)
	}
	return err
}

// finish flushes held-back split lines before ReadLogs returns err (nil
// included); a flush error only matters when there is no other.
func (rd *reader) finish(err error) error {
	if ferr := rd.w.flush(); ferr != nil && !errors.Is(ferr, errMaximumWrite) && err == nil {
		return fmt.Errorf("write log line: %w", ferr)
	}
	return err
}

func (rd *reader) seek(off int64) error {
	if _, err := rd.f.Seek(off, io.SeekStart); err != nil {
		return fmt.Errorf("seek %d in log file %q: %w", off, rd.path, err)
	}
	rd.pos = off
	if rd.r == nil {
		rd.r = bufio.NewReaderSize(rd.f, readBufferSize)
	} else {
		rd.r.Reset(rd.f)
	}
	return nil
}
