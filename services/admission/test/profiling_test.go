package test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestProcessProfiling checks --profiling and the file's profiling key end to
// end: the binary serves /debug/pprof/ on its --listen address, beside
// /metrics, only when one of them asks for it.
func TestProcessProfiling(t *testing.T) {
	tests := []struct {
		desc  string
		extra string   // appended to the configuration file
		args  []string // extra flags
		want  int
	}{
		{desc: "default off", want: http.StatusNotFound},
		{desc: "flag", args: []string{"--profiling"}, want: http.StatusOK},
		{desc: "file key", extra: "profiling: true\n", want: http.StatusOK},
		{desc: "flag turns the file's key off", extra: "profiling: true\n", args: []string{"--profiling=false"}, want: http.StatusNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			p := start(t, nodeConfig(t, tc.extra), tc.args...)
			base := "http://" + p.addr

			status, body := get(t, base+"/debug/pprof/cmdline")
			if status != tc.want {
				t.Fatalf("GET /debug/pprof/cmdline = %d, want %d (%.200q)", status, tc.want, body)
			}
			if status == http.StatusOK {
				// pprof.Cmdline: the process's arguments, NUL-separated.
				args := strings.Split(body, "\x00")
				if len(args) < 2 || args[0] != p.cmd.Path || strings.Join(args[1:], " ") != strings.Join(p.cmd.Args[1:], " ") {
					t.Errorf("cmdline %q, want the command line %q", args, p.cmd.Args)
				}
				if status, body := get(t, base+"/debug/pprof/"); status != http.StatusOK || !strings.Contains(body, "heap") {
					t.Errorf("GET /debug/pprof/ = %d, want 200 listing heap: %.200q", status, body)
				}
			}
			if status, body := get(t, base+"/metrics"); status != http.StatusOK || !strings.Contains(body, "go_goroutines") {
				t.Errorf("GET /metrics = %d, want 200 with go_goroutines: %.200q", status, body)
			}
			if err := p.stop(t); err != nil {
				t.Errorf("exit after SIGTERM: %v, want status 0", err)
			}
		})
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
