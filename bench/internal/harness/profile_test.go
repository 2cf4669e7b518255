package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBin writes an executable whose -h output is usage.
func fakeBin(t *testing.T, usage string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bin")
	script := "#!/bin/sh\ncat <<'EOF'\n" + usage + "\nEOF\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestProfilingArgs(t *testing.T) {
	with := fakeBin(t, "  --profiling\tserve pprof")
	without := fakeBin(t, "  --metrics-addr\taddress")
	for _, tc := range []struct {
		desc       string
		profileDir string
		bin        string
		wantURL    bool
	}{
		{desc: "no -profile: metrics off", bin: with},
		{desc: "-profile, binary without --profiling: metrics off", profileDir: "p", bin: without},
		{desc: "-profile, binary with --profiling", profileDir: "p", bin: with, wantURL: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			url, args, err := profilingArgs(Config{ProfileDir: tc.profileDir}, tc.bin, "metrics-addr")
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(args, " ")
			if !tc.wantURL {
				if url != "" || joined != "--metrics-addr=" {
					t.Fatalf("got url %q args %q, want no URL and --metrics-addr=", url, joined)
				}
				return
			}
			addr := strings.TrimPrefix(url, "http://")
			if addr == url || !strings.Contains(joined, "--metrics-addr="+addr) || !strings.Contains(joined, "--profiling") {
				t.Fatalf("got url %q args %q, want the metrics address and --profiling", url, joined)
			}
		})
	}
}
