package logs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
)

func TestLogPaths(t *testing.T) {
	dir := PodLogDir("/var/log/pods", "default", "web", "1234")
	if dir != "/var/log/pods/default_web_1234" {
		t.Fatalf("PodLogDir = %q", dir)
	}
	if p := LogPath(dir, "app", 3); p != "/var/log/pods/default_web_1234/app/3.log" {
		t.Fatalf("LogPath = %q", p)
	}
}

func TestPreviousInstance(t *testing.T) {
	cases := []struct {
		desc     string
		existing []int // restart counts with a log file
		restarts int
		want     string // "" means NotFound
	}{
		{desc: "never restarted", existing: []int{0}, restarts: 0},
		{desc: "one restart picks 0.log", existing: []int{0, 1}, restarts: 1, want: "0.log"},
		{desc: "picks n-1 among several", existing: []int{2, 3, 4}, restarts: 4, want: "3.log"},
		{desc: "previous file removed", existing: []int{4}, restarts: 4},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			for _, n := range tc.existing {
				p := LogPath(dir, "app", n)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := PreviousInstance(dir, "app", tc.restarts)
			if tc.want == "" {
				if !errdefs.IsNotFound(err) {
					t.Fatalf("got %q, %v; want NotFound", got, err)
				}
				return
			}
			if err != nil || got != filepath.Join(dir, "app", tc.want) {
				t.Fatalf("got %q, %v; want %s", got, err, tc.want)
			}
		})
	}
}
