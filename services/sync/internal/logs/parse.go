package logs

import (
	"bytes"
	"fmt"
	"time"

	"github.com/containerd/errdefs"
)

// CRI stream names and tags (runtimeapi.Stdout, runtimeapi.LogTagPartial...).
const (
	streamStdout = "stdout"
	streamStderr = "stderr"
	tagPartial   = "P"
	tagDelimiter = ':'
)

// timeFormatIn parses the runtime's timestamps, which drop trailing zeros of
// the fraction (the kubelet's RFC3339NanoLenient).
const timeFormatIn = time.RFC3339Nano

// timeFormatOut is the kubelet's RFC3339NanoFixed: a fixed-width fraction so
// prefixed lines line up, as `kubectl logs --timestamps` prints them.
const timeFormatOut = "2006-01-02T15:04:05.000000000Z07:00"

// logMessage is one parsed line of a CRI log file.
type logMessage struct {
	timestamp time.Time
	stream    string
	partial   bool
	// log is the content. A full line keeps its trailing newline (absent only
	// on an unterminated last line); a partial one never has it.
	log []byte
}

// parseCRILog parses one line of the CRI log format, matching the kubelet's
// parseCRILog: the first tag decides partial or full, further ':'-separated
// tags are ignored for forward compatibility. Errors wrap
// errdefs.ErrInvalidArgument. msg.log aliases line.
func parseCRILog(line []byte, msg *logMessage) error {
	rest := line
	field := func(what string) ([]byte, error) {
		idx := bytes.IndexByte(rest, ' ')
		if idx < 0 {
			return nil, fmt.Errorf("%s not found in log line: %w", what, errdefs.ErrInvalidArgument)
		}
		f := rest[:idx]
		rest = rest[idx+1:]
		return f, nil
	}

	ts, err := field("timestamp")
	if err != nil {
		return err
	}
	if msg.timestamp, err = time.Parse(timeFormatIn, string(ts)); err != nil {
		return fmt.Errorf("unexpected timestamp %q: %w", ts, errdefs.ErrInvalidArgument)
	}
	stream, err := field("stream type")
	if err != nil {
		return err
	}
	msg.stream = string(stream)
	if msg.stream != streamStdout && msg.stream != streamStderr {
		return fmt.Errorf("unexpected stream type %q: %w", stream, errdefs.ErrInvalidArgument)
	}
	tags, err := field("log tag")
	if err != nil {
		return err
	}
	if i := bytes.IndexByte(tags, tagDelimiter); i >= 0 {
		tags = tags[:i]
	}
	msg.partial = string(tags) == tagPartial
	if msg.partial && len(rest) > 0 && rest[len(rest)-1] == '\n' {
		rest = rest[:len(rest)-1]
	}
	msg.log = rest
	return nil
}
