package logs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

var base = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// crl formats one CRI log line written sec seconds after base.
func crl(sec int, stream, tag, content string) string {
	return fmt.Sprintf("%s %s %s %s\n", base.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), stream, tag, content)
}

func writeLog(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func i64(v int64) *int64 { return &v }

func TestReadLogs(t *testing.T) {
	mixed := crl(1, "stdout", "F", "out 1") +
		crl(2, "stderr", "F", "err 1") +
		crl(3, "stdout", "F", "out 2") +
		crl(4, "stderr", "F", "err 2") +
		crl(5, "stdout", "F", "out 3")
	split := crl(1, "stdout", "F", "before") +
		crl(2, "stdout", "P", "hel") +
		crl(3, "stderr", "F", "interleaved") +
		crl(4, "stdout", "P", "lo ") +
		crl(5, "stdout", "F", "world") +
		crl(6, "stdout", "F", "after")
	since := base.Add(3 * time.Second)
	cases := []struct {
		desc       string
		content    string
		opts       Options
		noStdout   bool
		noStderr   bool
		wantStdout string
		wantStderr string
	}{
		{desc: "whole file split by stream", content: mixed,
			wantStdout: "out 1\nout 2\nout 3\n", wantStderr: "err 1\nerr 2\n"},
		{desc: "partial lines are joined per stream", content: split,
			wantStdout: "before\nhello world\nafter\n", wantStderr: "interleaved\n"},
		{desc: "a split line never finished is written without newline", content: crl(1, "stdout", "F", "a") + crl(2, "stdout", "P", "unfinished"),
			wantStdout: "a\nunfinished"},
		{desc: "an unterminated last line is written", content: crl(1, "stdout", "F", "a") + strings.TrimSuffix(crl(2, "stdout", "F", "b"), "\n"),
			wantStdout: "a\nb"},
		{desc: "malformed lines are skipped", content: crl(1, "stdout", "F", "a") + "garbage\n" + crl(2, "stdout", "F", "b"),
			wantStdout: "a\nb\n"},
		{desc: "since drops older lines", content: mixed, opts: Options{SinceTime: &since},
			wantStdout: "out 2\nout 3\n", wantStderr: "err 2\n"},
		{desc: "a joined line takes its first piece's time for since", content: split, opts: Options{SinceTime: &since},
			wantStdout: "after\n", wantStderr: "interleaved\n"},
		{desc: "timestamps prefix a fixed-width RFC3339Nano time",
			content:    crl(1, "stdout", "F", "a") + "2026-03-04T05:06:08.5Z stderr F b\n",
			opts:       Options{Timestamps: true},
			wantStdout: "2026-03-04T05:06:08.000000000Z a\n", wantStderr: "2026-03-04T05:06:08.500000000Z b\n"},
		{desc: "limit bytes cuts the last line", content: mixed, opts: Options{LimitBytes: i64(9)},
			wantStdout: "out 1\n", wantStderr: "err"},
		{desc: "limit bytes counts the timestamp prefix", content: mixed, opts: Options{LimitBytes: i64(33), Timestamps: true},
			wantStdout: "2026-03-04T05:06:08.000000000Z ou"},
		{desc: "limit bytes zero writes nothing", content: mixed, opts: Options{LimitBytes: i64(0)}},
		{desc: "tail counts a joined line once", content: split, opts: Options{TailLines: i64(2)}, noStderr: true,
			wantStdout: "hello world\nafter\n"},
		{desc: "tail never starts inside a split line; the other stream's line inside it comes along", content: split, opts: Options{TailLines: i64(2)},
			wantStdout: "hello world\nafter\n", wantStderr: "interleaved\n"},
		{desc: "tail one", content: split, opts: Options{TailLines: i64(1)},
			wantStdout: "after\n"},
		{desc: "tail ignores an unselected stream's split line", content: crl(1, "stdout", "P", "a") + crl(2, "stderr", "F", "e1") + crl(3, "stderr", "F", "e2") + crl(4, "stdout", "F", "b"),
			opts: Options{TailLines: i64(1)}, noStdout: true, wantStderr: "e2\n"},
		{desc: "tail zero writes nothing", content: mixed, opts: Options{TailLines: i64(0)}},
		{desc: "tail longer than the file writes all", content: mixed, opts: Options{TailLines: i64(100)},
			wantStdout: "out 1\nout 2\nout 3\n", wantStderr: "err 1\nerr 2\n"},
		{desc: "negative tail means all", content: mixed, opts: Options{TailLines: i64(-1)},
			wantStdout: "out 1\nout 2\nout 3\n", wantStderr: "err 1\nerr 2\n"},
		{desc: "tail of stderr only counts stderr lines", content: mixed, opts: Options{TailLines: i64(1)}, noStdout: true,
			wantStderr: "err 2\n"},
		{desc: "stdout only", content: mixed, noStderr: true,
			wantStdout: "out 1\nout 2\nout 3\n"},
		{desc: "tail with since", content: mixed, opts: Options{TailLines: i64(4), SinceTime: &since},
			wantStdout: "out 2\nout 3\n", wantStderr: "err 2\n"},
		{desc: "empty file", content: "", opts: Options{TailLines: i64(3)}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			p := writeLog(t, tc.content)
			var stdout, stderr bytes.Buffer
			ow, ew := &stdout, &stderr
			var err error
			switch {
			case tc.noStdout:
				err = ReadLogs(context.Background(), p, tc.opts, nil, ew)
			case tc.noStderr:
				err = ReadLogs(context.Background(), p, tc.opts, ow, nil)
			default:
				err = ReadLogs(context.Background(), p, tc.opts, ow, ew)
			}
			if err != nil {
				t.Fatalf("ReadLogs: %v", err)
			}
			if stdout.String() != tc.wantStdout || stderr.String() != tc.wantStderr {
				t.Errorf("stdout %q stderr %q, want stdout %q stderr %q", stdout.String(), stderr.String(), tc.wantStdout, tc.wantStderr)
			}
		})
	}
}

func TestTailLargeFile(t *testing.T) {
	// Far bigger than tailBlockSize and the read buffer, with one split line
	// longer than a block sitting across block boundaries near the end.
	var b strings.Builder
	const lines = 6000
	for i := 0; i < lines; i++ {
		b.WriteString(crl(i, "stdout", "F", fmt.Sprintf("line %05d", i)))
	}
	long := strings.Repeat("x", 3*tailBlockSize)
	b.WriteString(crl(lines, "stdout", "P", long[:tailBlockSize]))
	b.WriteString(crl(lines, "stderr", "F", "noise"))
	b.WriteString(crl(lines, "stdout", "P", long[tailBlockSize:2*tailBlockSize]))
	b.WriteString(crl(lines, "stdout", "F", long[2*tailBlockSize:]))
	b.WriteString(crl(lines+1, "stdout", "F", "last"))
	if b.Len() < 20*tailBlockSize {
		t.Fatalf("test file only %d bytes", b.Len())
	}
	p := writeLog(t, b.String())

	cases := []struct {
		desc string
		tail int64
		want string
	}{
		{desc: "last line", tail: 1, want: "last\n"},
		{desc: "the long joined line counts once", tail: 2, want: long + "\nlast\n"},
		{desc: "reaching back over many blocks", tail: 1002, want: func() string {
			var w strings.Builder
			for i := lines - 1000; i < lines; i++ {
				fmt.Fprintf(&w, "line %05d\n", i)
			}
			return w.String() + long + "\nlast\n"
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			var out bytes.Buffer
			if err := ReadLogs(context.Background(), p, Options{TailLines: i64(tc.tail)}, &out, nil); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got %d bytes starting %q, want %d bytes starting %q", out.Len(), head(out.String()), len(tc.want), head(tc.want))
			}
		})
	}
}

func head(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

func TestReadLogsMissingFile(t *testing.T) {
	err := ReadLogs(context.Background(), filepath.Join(t.TempDir(), "nope.log"), Options{}, &bytes.Buffer{}, &bytes.Buffer{})
	if !errdefs.IsNotFound(err) {
		t.Fatalf("err = %v, want NotFound", err)
	}
}

func TestReadLogsThroughSymlink(t *testing.T) {
	p := writeLog(t, crl(1, "stdout", "F", "via link"))
	link := filepath.Join(t.TempDir(), "link.log")
	if err := os.Symlink(p, link); err != nil {
		t.Skip("symlinks unavailable: " + err.Error())
	}
	var out bytes.Buffer
	if err := ReadLogs(context.Background(), link, Options{}, &out, nil); err != nil {
		t.Fatal(err)
	}
	if out.String() != "via link\n" {
		t.Fatalf("got %q", out.String())
	}
}
