package nodeapi

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// systemLogServer serves a log directory holding app.log, svc/svc.log and
// sub/inner.log on /logs/.
func systemLogServer(t *testing.T, query bool) *Server {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"app.log":       "app line 1\napp line 2\n",
		"svc/svc.log":   "svc line\n",
		"sub/inner.log": "inner line\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return New(Options{NodeName: testNode, Metrics: prometheus.NewRegistry(), Auth: admin, SystemLogDir: dir, SystemLogQuery: query})
}

func TestSystemLogFiles(t *testing.T) {
	srv := systemLogServer(t, false)
	for _, tc := range []struct {
		desc, path, user string
		want             int
		wantBody         string
	}{
		{desc: "the directory lists its files", path: "/logs/", user: "logs", want: http.StatusOK, wantBody: `<a href="app.log">app.log</a>`},
		{desc: "a file", path: "/logs/app.log", user: "logs", want: http.StatusOK, wantBody: "app line 1\napp line 2\n"},
		{desc: "a file below a directory", path: "/logs/sub/inner.log", user: "admin", want: http.StatusOK, wantBody: "inner line\n"},
		{desc: "a missing file", path: "/logs/nope.log", user: "logs", want: http.StatusNotFound, wantBody: "404 page not found"},
		// The mux cleans the path and redirects out of /logs/.
		{desc: "no climbing out", path: "/logs/../../etc/passwd", user: "logs", want: http.StatusTemporaryRedirect, wantBody: `<a href="/etc/passwd">`},
		{desc: "queries are files' business without enableSystemLogQuery", path: "/logs/?query=app", user: "logs", want: http.StatusOK, wantBody: `<a href="svc/">svc/</a>`},
		{desc: "nodes/proxy is not nodes/log", path: "/logs/app.log", user: "proxy", want: http.StatusForbidden},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			code, body := get(t, srv, tc.path, tc.user)
			if code != tc.want || !strings.Contains(body, tc.wantBody) {
				t.Errorf("GET %s as %s: %d %q, want %d with %q", tc.path, tc.user, code, body, tc.want, tc.wantBody)
			}
		})
	}
	req := httptest.NewRequest(http.MethodPost, "/logs/app.log", nil)
	req.Header.Set("Authorization", "Bearer admin")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /logs/app.log: %d, want 405", rec.Code)
	}
}

func TestSystemLogHandlerOff(t *testing.T) {
	srv := New(Options{NodeName: testNode, Metrics: prometheus.NewRegistry(), Auth: admin})
	code, body := get(t, srv, "/logs/app.log", "logs")
	if code != http.StatusMethodNotAllowed || body != "logs endpoint is disabled.\n" {
		t.Errorf("GET /logs/app.log with no log directory: %d %q, want the kubelet's 405", code, body)
	}
}

func TestSystemLogQuery(t *testing.T) {
	srv := systemLogServer(t, true)
	for _, tc := range []struct {
		desc, path string
		want       int
		wantBody   string
	}{
		{desc: "a service logging to <service>.log", path: "/logs/?query=app", want: http.StatusOK, wantBody: "app line 1\napp line 2\n"},
		{desc: "a service logging to <service>/<service>.log", path: "/logs/?query=svc", want: http.StatusOK, wantBody: "svc line\n"},
		{desc: "two services", path: "/logs/?query=app&query=svc", want: http.StatusOK, wantBody: "app line 2\nsvc line\n"},
		{desc: "a service with no log", path: "/logs/?query=nosuch", want: http.StatusOK, wantBody: "\nlog not found for nosuch\n"},
		{desc: "a file", path: "/logs/?query=sub/inner.log", want: http.StatusOK, wantBody: "inner line\n"},
		{desc: "a file named from the directory", path: "/logs/?query=./app.log", want: http.StatusOK, wantBody: "app line 1\n"},
		{desc: "no query is the file server", path: "/logs/app.log", want: http.StatusOK, wantBody: "app line 1\n"},
		{desc: "options on a service logging to a file", path: "/logs/?query=app&tailLines=1", want: http.StatusOK,
			wantBody: "options present and query resolved to log files for [app]\ntry without specifying options\n"},
		{desc: "an empty query", path: "/logs/?query", want: http.StatusBadRequest, wantBody: "query: Invalid value: [\"\"]: may not be empty"},
		{desc: "a blank query", path: "/logs/?query=%20%20", want: http.StatusBadRequest, wantBody: "may not be empty"},
		{desc: "tailLines not a number", path: "/logs/?query=app&tailLines=x", want: http.StatusBadRequest, wantBody: "tailLines: Invalid value: \"x\""},
		{desc: "sinceTime not RFC 3339", path: "/logs/?query=app&sinceTime=yesterday", want: http.StatusBadRequest, wantBody: "sinceTime: Invalid value: \"yesterday\": invalid time format"},
		{desc: "a path and a query", path: "/logs/app.log?query=app", want: http.StatusNotAcceptable, wantBody: "path not allowed in query mode"},
		{desc: "options without a query", path: "/logs/?tailLines=3", want: http.StatusNotAcceptable, wantBody: "query: Required value: cannot be empty with options"},
		{desc: "a file with options", path: "/logs/?query=sub/inner.log&tailLines=3", want: http.StatusNotAcceptable, wantBody: "cannot specify file with options"},
		{desc: "a file and a service", path: "/logs/?query=sub/inner.log&query=app", want: http.StatusNotAcceptable, wantBody: "cannot specify a file and service"},
		{desc: "two files", path: "/logs/?query=sub/inner.log&query=./app.log", want: http.StatusNotAcceptable, wantBody: "cannot specify more than one file"},
		{desc: "a file outside the directory", path: "/logs/?query=../etc/passwd", want: http.StatusNotAcceptable, wantBody: "path escapes from parent"},
		{desc: "an absolute file name", path: "/logs/?query=/app.log", want: http.StatusNotAcceptable, wantBody: "path escapes from parent"},
		{desc: "a missing file", path: "/logs/?query=sub/nope.log", want: http.StatusNotAcceptable, wantBody: "no such file or directory"},
		{desc: "five services", path: "/logs/?query=a&query=b&query=c&query=d&query=e", want: http.StatusNotAcceptable, wantBody: "query: Too many: 5: must have at most 4 items"},
		{desc: "a service name journalctl must not see", path: "/logs/?query=" + url.QueryEscape("app;rm"), want: http.StatusNotAcceptable, wantBody: "input contains unsupported characters"},
		{desc: "a later boot", path: "/logs/?query=app&boot=1", want: http.StatusNotAcceptable, wantBody: "boot: Invalid value: 1: must be less than 1"},
		{desc: "too many lines", path: "/logs/?query=app&tailLines=100001", want: http.StatusNotAcceptable, wantBody: "tailLines: Invalid value: 100001"},
		{desc: "until before since", path: "/logs/?query=app&sinceTime=2026-01-02T00:00:00Z&untilTime=2026-01-01T00:00:00Z", want: http.StatusNotAcceptable, wantBody: "must be after `sinceTime`"},
		{desc: "a pattern that does not compile", path: "/logs/?query=app&pattern=(", want: http.StatusNotAcceptable, wantBody: "pattern: Invalid value: \"(\""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			code, body := get(t, srv, tc.path, "logs")
			if code != tc.want || !strings.Contains(body, tc.wantBody) {
				t.Errorf("GET %s: %d %q, want %d with %q", tc.path, code, body, tc.want, tc.wantBody)
			}
		})
	}

	// A client asking for gzip gets the service's log compressed.
	req := httptest.NewRequest(http.MethodGet, "/logs/?query=svc", nil)
	req.Header.Set("Authorization", "Bearer logs")
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if enc := rec.Header().Get("Content-Encoding"); rec.Code != http.StatusOK || enc != "gzip" {
		t.Fatalf("gzip query: %d, Content-Encoding %q", rec.Code, enc)
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := io.ReadAll(zr); err != nil || string(plain) != "svc line\n" {
		t.Errorf("gzip query: %q, %v; want the service's log", plain, err)
	}
}

// TestJournalArgs: what journalctl is asked, as the kubelet's getLoggingCmd.
func TestJournalArgs(t *testing.T) {
	since, until := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), time.Date(2026, 3, 4, 15, 16, 17, 0, time.UTC)
	lines, boot := 3, -1
	q := nodeLogQuery{logQueryOptions: logQueryOptions{sinceTime: &since, untilTime: &until, tailLines: &lines, boot: &boot, pattern: "err.*"}}
	want := []string{"--utc", "--no-pager", "--output=short-precise", "--since=2026-3-4 05:6:7", "--until=2026-3-4 15:16:17",
		"--pager-end", "--lines=3", "--unit=kubelet", "--unit=containerd", "--grep=err.*", "--boot", "-1"}
	if got := q.journalArgs([]string{"kubelet", "containerd"}); !slices.Equal(got, want) {
		t.Errorf("journalArgs:\n got %q\nwant %q", got, want)
	}
	if got, want := (&nodeLogQuery{}).journalArgs([]string{"kubelet"}), []string{"--utc", "--no-pager", "--output=short-precise", "--unit=kubelet"}; !slices.Equal(got, want) {
		t.Errorf("journalArgs without options: %q, want %q", got, want)
	}
}
