package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// Only shortens the poll safety net; fsnotify wakes the tests anyway.
	pollInterval = 100 * time.Millisecond
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe to read while ReadLogs writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// followFixture is one running follow: its file, output and exit switch.
type followFixture struct {
	t      *testing.T
	path   string
	out    *syncBuffer
	exited atomic.Bool
	// eofChecks counts the calls of ContainerExited: the follow makes one
	// each time a read pass has caught up with the file.
	eofChecks atomic.Int32
}

func (f *followFixture) containerExited() bool {
	f.eofChecks.Add(1)
	return f.exited.Load()
}

func (f *followFixture) append(s string) {
	f.t.Helper()
	fh, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		f.t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteString(s); err != nil {
		f.t.Fatal(err)
	}
}

// waitUntil polls cond until it holds, failing the test after 10 s.
func (f *followFixture) waitUntil(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			f.t.Fatalf("timed out waiting for %s; output %q", what, f.out.String())
		case <-tick.C:
		}
	}
}

// waitOut waits until the output ends with suffix.
func (f *followFixture) waitOut(suffix string) {
	f.t.Helper()
	f.waitUntil("the output to end with "+strconv.Quote(suffix), func() bool { return strings.HasSuffix(f.out.String(), suffix) })
}

// waitPasses waits until n read passes have started and caught up with the
// file since the call. The first catch-up seen may end a pass that began
// before the call, so n >= 2 proves one read everything written before it.
func (f *followFixture) waitPasses(n int32) {
	f.t.Helper()
	want := f.eofChecks.Load() + n
	f.waitUntil(fmt.Sprintf("%d read passes", n), func() bool { return f.eofChecks.Load() >= want })
}

func TestFollow(t *testing.T) {
	cases := []struct {
		desc    string
		initial string
		opts    Options
		script  func(f *followFixture)
		want    string
	}{
		{
			desc:    "lines appended after start arrive, and exit drains the rest",
			initial: crl(1, "stdout", "F", "a"),
			script: func(f *followFixture) {
				f.waitOut("a\n")
				f.append(crl(2, "stdout", "F", "b"))
				f.waitOut("b\n")
				f.append(crl(3, "stdout", "P", "hello "))
				f.append(crl(4, "stdout", "F", "world"))
				f.waitOut("hello world\n")
				// Written before the exit is seen: the final pass reads it.
				f.append(crl(5, "stdout", "F", "d"))
				f.exited.Store(true)
			},
			want: "a\nb\nhello world\nd\n",
		},
		{
			desc:    "an unterminated line waits for its newline",
			initial: crl(1, "stdout", "F", "a"),
			script: func(f *followFixture) {
				f.waitOut("a\n")
				f.append(strings.TrimSuffix(crl(2, "stdout", "F", "par"), "\n"))
				// Read passes woken by the write and by a poll tick have
				// seen the half line and must have put it back.
				f.waitPasses(3)
				if got := f.out.String(); got != "a\n" {
					f.t.Errorf("half-written line leaked: %q", got)
				}
				f.append("tial\n")
				f.waitOut("partial\n")
				f.exited.Store(true)
			},
			want: "a\npartial\n",
		},
		{
			desc:    "rotation by rename and reopen: the old file is drained, then the new one read",
			initial: crl(1, "stdout", "F", "a"),
			script: func(f *followFixture) {
				f.waitOut("a\n")
				old, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					f.t.Fatal(err)
				}
				defer old.Close()
				if err := os.Rename(f.path, f.path+".20260304-050607"); err != nil {
					f.t.Fatal(err)
				}
				// The runtime writes to its old descriptor until it reopens.
				if _, err := old.WriteString(crl(2, "stdout", "F", "late")); err != nil {
					f.t.Fatal(err)
				}
				f.append(crl(3, "stdout", "F", "new file"))
				f.waitOut("new file\n")
				f.append(crl(4, "stderr", "F", "more"))
				f.waitOut("more\n")
				f.exited.Store(true)
			},
			want: "a\nlate\nnew file\nmore\n",
		},
		{
			desc:    "copytruncate: a truncated file is read again from its start",
			initial: crl(1, "stdout", "F", "first line") + crl(2, "stdout", "F", "second line"),
			script: func(f *followFixture) {
				f.waitOut("second line\n")
				if err := os.WriteFile(f.path, []byte(crl(3, "stdout", "F", "c")), 0o644); err != nil {
					f.t.Fatal(err)
				}
				f.waitOut("c\n")
				f.exited.Store(true)
			},
			want: "first line\nsecond line\nc\n",
		},
		{
			desc:    "tail with follow starts at the last lines",
			initial: crl(1, "stdout", "F", "a") + crl(2, "stdout", "F", "b"),
			opts:    Options{TailLines: i64(1)},
			script: func(f *followFixture) {
				f.waitOut("b\n")
				f.append(crl(3, "stdout", "F", "c"))
				f.waitOut("c\n")
				f.exited.Store(true)
			},
			want: "b\nc\n",
		},
		{
			desc:    "an exited container's unfinished split line is written as it is",
			initial: crl(1, "stdout", "F", "a") + crl(2, "stdout", "P", "cut sho"),
			script: func(f *followFixture) {
				f.exited.Store(true)
			},
			want: "a\ncut sho",
		},
		{
			desc:    "limit bytes ends a follow",
			initial: crl(1, "stdout", "F", "aaaa"),
			opts:    Options{LimitBytes: i64(7)},
			script: func(f *followFixture) {
				f.waitOut("aaaa\n")
				f.append(crl(2, "stdout", "F", "bbbb"))
				// No exit: the limit alone must end ReadLogs.
			},
			want: "aaaa\nbb",
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			f := &followFixture{t: t, path: writeLog(t, tc.initial), out: &syncBuffer{}}
			opts := tc.opts
			opts.Follow = true
			opts.ContainerExited = f.containerExited
			done := make(chan error, 1)
			go func() { done <- ReadLogs(context.Background(), f.path, opts, f.out, f.out) }()
			tc.script(f)
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("ReadLogs: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("follow did not end; output %q", f.out.String())
			}
			if got := f.out.String(); got != tc.want {
				t.Errorf("output %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFollowEndsWithContext(t *testing.T) {
	f := &followFixture{t: t, path: writeLog(t, crl(1, "stdout", "F", "a")), out: &syncBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ReadLogs(ctx, f.path, Options{Follow: true}, f.out, f.out) }()
	f.waitOut("a\n")
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follow did not end after cancel")
	}
}
