package logs

import (
	"errors"
	"io"
	"math"
	"time"
)

// maxPartialBytes bounds how much of one split line is held back waiting for
// its F piece; past it the pieces so far are written as they are, which is
// what the kubelet does with every piece, so memory stays bounded against a
// process that never ends its line.
const maxPartialBytes = 1 << 20

// errMaximumWrite ends reading once LimitBytes have been written.
var errMaximumWrite = errors.New("maximum write")

// partialLine is a split line being joined: the pieces so far and the time
// of the first, which the joined line carries.
type partialLine struct {
	timestamp time.Time
	buf       []byte
}

// logWriter applies since, timestamps, the byte limit and the stream
// selection to parsed lines, like the kubelet's logWriter, and joins split
// lines per stream.
type logWriter struct {
	stdout, stderr io.Writer
	since          time.Time
	timestamps     bool
	remain         int64
	pending        map[string]*partialLine
}

func newLogWriter(stdout, stderr io.Writer, opts Options) *logWriter {
	w := &logWriter{
		stdout:     stdout,
		stderr:     stderr,
		timestamps: opts.Timestamps,
		remain:     math.MaxInt64,
		pending:    map[string]*partialLine{},
	}
	if opts.SinceTime != nil {
		w.since = *opts.SinceTime
	}
	if opts.LimitBytes != nil && *opts.LimitBytes >= 0 {
		w.remain = *opts.LimitBytes
	}
	return w
}

// selected reports whether the caller asked for stream (passed a writer).
func (w *logWriter) selected(stream string) bool {
	return w.out(stream) != nil
}

func (w *logWriter) out(stream string) io.Writer {
	if stream == streamStderr {
		return w.stderr
	}
	return w.stdout
}

// write takes one parsed line and returns errMaximumWrite once the byte
// limit is used up.
func (w *logWriter) write(msg *logMessage) error {
	if !w.selected(msg.stream) {
		return nil
	}
	p := w.pending[msg.stream]
	if msg.partial {
		if p == nil {
			p = &partialLine{timestamp: msg.timestamp}
			w.pending[msg.stream] = p
		}
		p.buf = append(p.buf, msg.log...)
		if len(p.buf) < maxPartialBytes {
			return nil
		}
		delete(w.pending, msg.stream)
		return w.emit(msg.stream, p.timestamp, p.buf)
	}
	ts, line := msg.timestamp, msg.log
	if p != nil {
		delete(w.pending, msg.stream)
		ts, line = p.timestamp, append(p.buf, msg.log...)
	}
	return w.emit(msg.stream, ts, line)
}

// flush writes split lines whose F piece never came (the file ended, or the
// container exited mid-line), without a newline, as the runtime wrote them.
func (w *logWriter) flush() error {
	for _, stream := range []string{streamStdout, streamStderr} {
		if p := w.pending[stream]; p != nil {
			delete(w.pending, stream)
			if err := w.emit(stream, p.timestamp, p.buf); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *logWriter) emit(stream string, ts time.Time, line []byte) error {
	if ts.Before(w.since) {
		return nil
	}
	if w.timestamps {
		prefixed := make([]byte, 0, len(timeFormatOut)+1+len(line))
		prefixed = ts.AppendFormat(prefixed, timeFormatOut)
		prefixed = append(prefixed, ' ')
		line = append(prefixed, line...)
	}
	if int64(len(line)) > w.remain {
		line = line[:w.remain]
	}
	n, err := w.out(stream).Write(line)
	w.remain -= int64(n)
	if err != nil {
		return err
	}
	if w.remain <= 0 {
		return errMaximumWrite
	}
	return nil
}
