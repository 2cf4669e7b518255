package logs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
)

// pollInterval is the follow loop's safety net: it looks at the file this
// often even without an fsnotify event (the kubelet's logForceCheckPeriod),
// which also covers file systems where inotify does not work.
var pollInterval = time.Second

// atEOF decides what follow does when the reader has caught up with the
// file; rest is an unterminated line read at the end. It reports done when
// the follow is over (container exited and drained), or an error.
//
// Rotation, as the kubelet's container log manager does it (rename the file,
// then ask the runtime to reopen the path) or as copytruncate does it
// (truncate in place), is handled here: a file at path that is no longer the
// open one is opened, the old one is read to its end once more (the runtime
// may have written to it until it reopened), and then reading continues at
// the start of the new file. A truncated file is read again from its start.
func (rd *reader) atEOF(ctx context.Context, rest []byte) (bool, error) {
	if rd.rotatedTo != nil || rd.finalPass {
		// The old file (or the exited container's file) is drained; an
		// unterminated line in it will never be finished, so write it.
		rd.pos += int64(len(rest))
		if err := rd.handle(rest); err != nil {
			if errors.Is(err, errMaximumWrite) {
				return true, nil
			}
			return true, err
		}
		if rd.finalPass {
			return true, nil
		}
		rd.log.Debug("log file rotated, following the new file")
		// A split line does not continue across files.
		if err := rd.w.flush(); err != nil {
			if errors.Is(err, errMaximumWrite) {
				return true, nil
			}
			return true, err
		}
		rd.f.Close()
		rd.f, rd.rotatedTo = rd.rotatedTo, nil
		return false, rd.seek(0)
	}
	// Put an unterminated line back so it is read whole once its newline
	// is written.
	if len(rest) > 0 {
		if err := rd.seek(rd.pos); err != nil {
			return true, err
		}
	}

	if cur, err := rd.f.Stat(); err == nil {
		if cur.Size() < rd.pos {
			rd.log.Debug("log file truncated, reading from its start")
			return false, rd.seek(0)
		}
		if next, err := os.Stat(rd.path); err == nil && !os.SameFile(cur, next) {
			if nf, err := os.Open(rd.path); err == nil {
				rd.rotatedTo = nf
				return false, nil
			}
		}
	}

	if rd.opts.ContainerExited != nil && rd.opts.ContainerExited() {
		rd.finalPass = true
		return false, nil
	}
	if rd.follow == nil {
		// Read once more after starting the watch: a write between the last
		// read and the watch would otherwise wait for the poll.
		rd.follow = newWaiter(rd.path, rd.log)
		return false, nil
	}
	if err := rd.follow.wait(ctx); err != nil {
		return true, err
	}
	return false, nil
}

// waiter wakes the follow loop on a change in the log's directory (a write,
// the rotated file's rename, the new file's creation) or on the poll tick.
type waiter struct {
	fw   *fsnotify.Watcher
	tick *time.Ticker
	log  *zap.Logger
}

func newWaiter(path string, log *zap.Logger) *waiter {
	w := &waiter{tick: time.NewTicker(pollInterval), log: log}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		log.Warn("fsnotify unavailable, polling the log file", zap.Error(err))
		return w
	}
	// The directory, not the file: a watch on the file would stay on the
	// renamed old file and never see the new one created.
	if err := fw.Add(filepath.Dir(path)); err != nil {
		log.Warn("cannot watch the log directory, polling the log file", zap.Error(err))
		fw.Close()
		return w
	}
	w.fw = fw
	return w
}

func (w *waiter) wait(ctx context.Context) error {
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w.fw != nil {
		events, errs = w.fw.Events, w.fw.Errors
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case _, ok := <-events:
		if !ok {
			w.fw = nil
		}
	case err, ok := <-errs:
		if ok {
			w.log.Debug("fsnotify error, relying on the poll", zap.Error(err))
		}
	case <-w.tick.C:
	}
	// One read pass serves every change queued so far.
	for w.fw != nil {
		select {
		case _, ok := <-w.fw.Events:
			if !ok {
				w.fw = nil
			}
			continue
		default:
		}
		break
	}
	return nil
}

func (w *waiter) close() {
	w.tick.Stop()
	if w.fw != nil {
		w.fw.Close()
	}
}
