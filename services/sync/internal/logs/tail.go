package logs

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// tailBlockSize is how much findTailStart reads per step backwards.
const tailBlockSize = 8 * 1024

// backwardLines yields a file's lines from the last to the first, reading
// blocks of tailBlockSize from the end, so a tail of a large file costs about
// the size of the tail.
type backwardLines struct {
	f   *os.File
	pos int64  // bytes before pos are not read yet
	buf []byte // file[pos:end of the current unsplit region]
	eof bool
}

func newBackwardLines(f *os.File, size int64) (*backwardLines, error) {
	b := &backwardLines{f: f, pos: size}
	if size == 0 {
		b.eof = true
		return b, nil
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, size-1); err != nil {
		return nil, fmt.Errorf("read log file: %w", err)
	}
	// The newline ending the last line does not start an empty line.
	if last[0] == '\n' {
		b.pos--
	}
	return b, nil
}

// prev returns the previous line (without its newline) and its offset; ok
// is false before the first line.
func (b *backwardLines) prev() (line []byte, start int64, ok bool, err error) {
	for {
		if b.eof {
			return nil, 0, false, nil
		}
		if i := bytes.LastIndexByte(b.buf, '\n'); i >= 0 {
			line = b.buf[i+1:]
			b.buf = b.buf[:i]
			return line, b.pos + int64(i) + 1, true, nil
		}
		if b.pos == 0 {
			b.eof = true
			return b.buf, 0, true, nil
		}
		step := min(int64(tailBlockSize), b.pos)
		b.pos -= step
		block := make([]byte, step, step+int64(len(b.buf)))
		if _, err := b.f.ReadAt(block, b.pos); err != nil && err != io.EOF {
			return nil, 0, false, fmt.Errorf("read log file: %w", err)
		}
		b.buf = append(block, b.buf...)
	}
}

// findTailStart returns the offset at which the last n lines of the
// selected streams begin. It does what the kubelet's
// tail.FindTailLineStartIndex does for raw lines, for joined lines instead:
// only full lines (tag F) count, so a line the runtime split into P pieces
// counts once, and the start is moved back so that no selected stream's
// split line straddles it (its first pieces would be lost). A stream's line
// finished while another stream's split line was in progress can therefore
// add one to what is written. Malformed lines count for nothing.
func findTailStart(f *os.File, n int64, selected func(stream string) bool) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat log file: %w", err)
	}
	lines, err := newBackwardLines(f, fi.Size())
	if err != nil {
		return 0, err
	}
	var msg logMessage
	parse := func(line []byte) bool {
		return parseCRILog(line, &msg) == nil && selected(msg.stream)
	}

	// Find the (n+1)-th full line from the end; the tail starts after it.
	var count int64
	for {
		line, start, ok, err := lines.prev()
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, nil
		}
		if !parse(line) || msg.partial {
			continue
		}
		if count++; count > n {
			// The boundary after this full line is clean for its stream;
			// the other selected streams are yet to be seen.
			need := map[string]bool{}
			for _, s := range []string{streamStdout, streamStderr} {
				if s != msg.stream && selected(s) {
					need[s] = true
				}
			}
			return settleTail(lines, start+int64(len(line))+1, need, selected, parse, &msg)
		}
	}
}

// settleTail moves candidate back until no selected stream has a split line
// open across it: a boundary is clean for a stream when that stream's last
// line before it is full (or there is none). need holds the streams whose
// last line before candidate has not been seen yet.
func settleTail(lines *backwardLines, candidate int64, need map[string]bool, selected func(string) bool, parse func([]byte) bool, msg *logMessage) (int64, error) {
	for len(need) > 0 {
		line, start, ok, err := lines.prev()
		if err != nil {
			return 0, err
		}
		if !ok {
			return candidate, nil
		}
		if !parse(line) || !need[msg.stream] {
			continue
		}
		if !msg.partial {
			delete(need, msg.stream)
			continue
		}
		// A split line straddles candidate: start before this piece and
		// look at every selected stream again from here.
		candidate = start
		for _, s := range []string{streamStdout, streamStderr} {
			if selected(s) {
				need[s] = true
			}
		}
	}
	return candidate, nil
}
