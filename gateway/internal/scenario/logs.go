package scenario

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// criLogLine is one line of a CRI container log file.
type criLogLine struct {
	Time    time.Time
	Stream  string // stdout or stderr
	Partial bool   // tag P: the line continues in the next entry
	Content string
}

// parseCRILogLine reads "<RFC3339Nano time> <stream> <tags> <content>", the
// format runtimes write under the pod's log directory. It follows the
// kubelet's parseCRILog (pkg/kubelet/kuberuntime/logs): the first tag is P
// (partial) or F (full), further tags are separated by ':'.
func parseCRILogLine(line string) (criLogLine, error) {
	line = strings.TrimSuffix(line, "\n")
	ts, rest, ok := strings.Cut(line, " ")
	if !ok {
		return criLogLine{}, fmt.Errorf("no timestamp separator in %q", line)
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return criLogLine{}, fmt.Errorf("timestamp %q: %w", ts, err)
	}
	stream, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return criLogLine{}, fmt.Errorf("no stream separator in %q", line)
	}
	if stream != "stdout" && stream != "stderr" {
		return criLogLine{}, fmt.Errorf("unknown stream %q in %q", stream, line)
	}
	tags, content, ok := strings.Cut(rest, " ")
	if !ok {
		return criLogLine{}, fmt.Errorf("no tag separator in %q", line)
	}
	first, _, _ := strings.Cut(tags, ":")
	if first != "P" && first != "F" {
		return criLogLine{}, fmt.Errorf("unknown tag %q in %q", first, line)
	}
	return criLogLine{Time: t, Stream: stream, Partial: first == "P", Content: content}, nil
}

// errLineNotYet means the log does not hold the wanted line yet.
var errLineNotYet = errors.New("line not in the log yet")

// findLogLine returns the first complete entry of the log whose content is
// want. Complete means newline-terminated: a runtime may be mid-write.
func findLogLine(log, want string) (criLogLine, error) {
	for len(log) > 0 {
		line, rest, complete := strings.Cut(log, "\n")
		if !complete {
			break
		}
		log = rest
		entry, err := parseCRILogLine(line)
		if err != nil {
			return criLogLine{}, err
		}
		if entry.Content == want {
			return entry, nil
		}
	}
	return criLogLine{}, errLineNotYet
}

// readContainerLog: the line the container printed reaches the CRI log file
// at the container's log path, as a full stdout entry.
func (r *run) readContainerLog(t *testing.T) {
	path := r.containerLogPath()
	deadline := time.Now().Add(r.env.Timeout)
	var (
		entry   criLogLine
		lastErr error
	)
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			entry, err = findLogLine(string(data), r.logLine)
			if err == nil {
				break
			}
			if !errors.Is(err, errLineNotYet) {
				t.Fatalf("container log %s: %v\ncontent:\n%s", path, err, data)
			}
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("container log %s: %q not found within %v: %v", path, r.logLine, r.env.Timeout, lastErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("container log line: %s", entry.Content)

	if entry.Stream != "stdout" {
		t.Errorf("log line stream = %q, want stdout", entry.Stream)
	}
	if entry.Partial {
		t.Errorf("log line tagged partial, want a full line")
	}
	// The runtime stamps the line when it reads it, after the start; allow a
	// second for clocks taken in different processes.
	if started := time.Unix(0, r.startedAt); entry.Time.Before(started.Add(-time.Second)) {
		t.Errorf("log line time %v is before the container started (%v)", entry.Time, started)
	}
}
