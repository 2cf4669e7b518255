package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

func podYAML(name string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  containers:\n  - name: c\n    image: busybox\n"
}

func TestApply(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	multi := write("multi.yaml", podYAML("a")+"---\n"+podYAML("b"))
	write("d/one.yaml", podYAML("d1"))
	write("d/two.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"d2"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	write("d/notes.txt", "not a manifest")
	write("d/sub/three.yml", podYAML("d3"))
	invalid := write("invalid.yaml", podYAML("ok")+"---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: c\n")

	tests := []struct {
		desc          string
		stdin         string
		args          []string
		wantCode      int
		wantOut       []string
		wantManifests []string // contents sent, in order
		wantErr       string
		wantPods      []string
	}{
		{
			desc:          "a file with two documents goes as one manifest",
			args:          []string{"apply", "-f", multi},
			wantOut:       []string{"pod/a created", "pod/b created"},
			wantManifests: []string{podYAML("a") + "---\n" + podYAML("b")},
			wantPods:      []string{"a", "b"},
		},
		{
			desc:          "a directory: manifest files only, sorted, not recursive",
			args:          []string{"apply", "-f", filepath.Join(dir, "d")},
			wantOut:       []string{"pod/d1 created", "pod/d2 created"},
			wantManifests: []string{podYAML("d1"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"d2"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`},
			wantPods:      []string{"d1", "d2"},
		},
		{
			// Walk order, as kubectl's: d/one.yaml, d/sub/three.yml, d/two.json.
			desc:          "a directory with -R includes subdirectories in walk order",
			args:          []string{"apply", "-R", "-f", filepath.Join(dir, "d")},
			wantOut:       []string{"pod/d1 created", "pod/d3 created", "pod/d2 created"},
			wantManifests: []string{podYAML("d1"), podYAML("d3"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"d2"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`},
			wantPods:      []string{"d1", "d2", "d3"},
		},
		{
			desc:          "stdin with several documents",
			stdin:         podYAML("s1") + "---\n" + podYAML("s2"),
			args:          []string{"apply", "-f", "-"},
			wantOut:       []string{"pod/s1 created", "pod/s2 created"},
			wantManifests: []string{podYAML("s1") + "---\n" + podYAML("s2")},
			wantPods:      []string{"s1", "s2"},
		},
		{
			desc:          "server dry run applies nothing",
			args:          []string{"apply", "--dry-run=server", "-f", multi},
			wantOut:       []string{"pod/a created (server dry run)", "pod/b created (server dry run)"},
			wantManifests: []string{podYAML("a") + "---\n" + podYAML("b")},
		},
		{
			desc:          "an invalid document fails the whole manifest with exit 1",
			args:          []string{"apply", "-f", invalid},
			wantCode:      1,
			wantManifests: []string{podYAML("ok") + "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: c\n"},
			wantErr:       "Error from server (BadRequest): document 1: spec.containers[0].image: Required value",
		},
		{
			desc:     "a missing path is a kubectl-like error",
			args:     []string{"apply", "-f", filepath.Join(dir, "nope.yaml")},
			wantCode: 1,
			wantErr:  `error: the path "` + filepath.Join(dir, "nope.yaml") + `" does not exist`,
		},
		{
			desc:     "no -f",
			args:     []string{"apply"},
			wantCode: 1,
			wantErr:  "error: must specify one of -f and -k",
		},
		{
			desc:     "bad dry-run value is a usage error",
			args:     []string{"apply", "--dry-run=maybe", "-f", multi},
			wantCode: 1,
			wantErr:  `error: invalid dry-run value (maybe). Must be "none" or "server"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := newHarness(t)
			r := h.run(tc.stdin, tc.args...)
			if r.code != tc.wantCode {
				t.Fatalf("exit code %d, want %d (stderr %q)", r.code, tc.wantCode, r.stderr)
			}
			if got := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(tc.wantOut) > 0 && strings.Join(got, "|") != strings.Join(tc.wantOut, "|") {
				t.Errorf("stdout lines %q, want %q", got, tc.wantOut)
			}
			if tc.wantErr != "" && !strings.Contains(r.stderr, tc.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", r.stderr, tc.wantErr)
			}
			var sent []string
			for _, req := range h.fake.Requests() {
				if a, ok := req.(*podv1.ApplyRequest); ok {
					sent = append(sent, a.GetManifest())
					if a.GetDryRun() != strings.Contains(strings.Join(tc.args, " "), "--dry-run=server") {
						t.Errorf("dry_run = %v for args %q", a.GetDryRun(), tc.args)
					}
				}
			}
			if strings.Join(sent, "\x00") != strings.Join(tc.wantManifests, "\x00") {
				t.Errorf("manifests sent %q, want %q", sent, tc.wantManifests)
			}
			for _, name := range tc.wantPods {
				if _, ok := h.fake.Pod("default", name); !ok {
					t.Errorf("pod %s was not applied", name)
				}
			}
			if tc.wantCode != 0 || strings.Contains(strings.Join(tc.args, " "), "dry-run") {
				if _, ok := h.fake.Pod("default", "a"); ok {
					t.Errorf("pod a exists after a dry run")
				}
				if _, ok := h.fake.Pod("default", "ok"); ok {
					t.Errorf("pod ok of an invalid manifest was applied")
				}
			}
		})
	}
}

func TestApplyTwiceReportsUnchangedAndConfigured(t *testing.T) {
	h := newHarness(t)
	if r := h.run(podYAML("a"), "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("first apply: %d %s", r.code, r.stderr)
	}
	if r := h.run(podYAML("a"), "apply", "-f", "-"); strings.TrimSpace(r.stdout) != "pod/a unchanged" {
		t.Errorf("second apply printed %q", r.stdout)
	}
	changed := strings.Replace(podYAML("a"), "busybox", "busybox:1.36", 1)
	if r := h.run(changed, "apply", "-f", "-"); strings.TrimSpace(r.stdout) != "pod/a configured" {
		t.Errorf("changed apply printed %q", r.stdout)
	}
}
