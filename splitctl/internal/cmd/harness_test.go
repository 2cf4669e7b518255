package cmd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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
	return h.runCtx(context.Background(), stdin, args...)
}

func (h *harness) runCtx(ctx context.Context, stdin string, args ...string) result {
	h.t.Helper()
	var out, errOut bytes.Buffer
	env := &Env{
		In:     io.Reader(strings.NewReader(stdin)),
		Out:    &out,
		ErrOut: &errOut,
		Getenv: func(k string) string { return h.env[k] },
		Now:    h.now,
	}
	code := Main(ctx, args, env)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}
