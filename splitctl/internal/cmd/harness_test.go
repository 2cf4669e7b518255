package cmd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
	"github.com/splitlet/splitlet/splitctl/internal/podfake"
)

// testNow is the fixed clock of command tests.
var testNow = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

// harness runs the real command tree against the fake PodService served
// over HTTP by httptest, so requests cross the Connect boundary.
type harness struct {
	t    *testing.T
	fake *podfake.Server
	srv  *httptest.Server
	env  map[string]string
	now  func() time.Time
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	fake := podfake.New()
	fake.Now = func() time.Time { return testNow }
	mux := http.NewServeMux()
	mux.Handle(podv1connect.NewPodServiceHandler(fake))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h := &harness{t: t, fake: fake, srv: srv, now: func() time.Time { return testNow }}
	// The server comes from the environment, as a user would set it; the
	// config file path points nowhere so the test's HOME does not matter.
	h.env = map[string]string{"SPLITLET_SERVER": srv.URL, "SPLITLET_CONFIG": t.TempDir() + "/none.yaml"}
	return h
}

type result struct {
	code   int
	stdout string
	stderr string
}

func (h *harness) run(stdin string, args ...string) result {
	return h.runCtx(context.Background(), stdin, new(syncBuffer), args...)
}

// runCtx runs the command until it returns or ctx ends; out gets its stdout
// as it is written, for a test that reads it while the command runs.
func (h *harness) runCtx(ctx context.Context, stdin string, out *syncBuffer, args ...string) result {
	h.t.Helper()
	var errOut bytes.Buffer
	env := &Env{
		In:     io.Reader(strings.NewReader(stdin)),
		Out:    out,
		ErrOut: &errOut,
		Getenv: func(k string) string { return h.env[k] },
		Now:    h.now,
	}
	code := Main(ctx, args, env)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// syncBuffer is a bytes.Buffer that may be read while a command writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitUntil checks cond on every tick until it holds; it reports false if
// cond still does not hold after 5s or once ctx ends. It may run outside the
// test's goroutine.
func waitUntil(ctx context.Context, cond func() bool) bool {
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
	return true
}
