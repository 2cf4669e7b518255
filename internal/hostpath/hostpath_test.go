package hostpath

import (
	"os"
	"path/filepath"
	"testing"
)

func TestResolveFollowsLinksOfTheExistingPart(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		filepath.Join(root, "link"):               filepath.Join(root, "real"),
		filepath.Join(root, "link", "new", "x"):   filepath.Join(root, "real", "new", "x"),
		filepath.Join(root, "a", "..", "link"):    filepath.Join(root, "real"),
		filepath.Join(root, "missing", "..", "b"): filepath.Join(root, "b"),
		"/": "/",
	} {
		if got := Resolve(in); got != want {
			t.Errorf("Resolve(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, dir string
		want      bool
	}{
		{"/var/lib/splitlet", "/var/lib/splitlet", true},
		{"/var/lib/splitlet/sync", "/var/lib/splitlet", true},
		{"/var/lib/splitlet2", "/var/lib/splitlet", false},
		{"/etc", "/", true},
		{"/var", "/var/lib", false},
	} {
		if got := Within(tc.path, tc.dir); got != tc.want {
			t.Errorf("Within(%s, %s) = %v", tc.path, tc.dir, got)
		}
	}
}
