package hostpath

import (
	"os"
	"path/filepath"
	"testing"
)

// linkTree makes a directory with the shapes a hostPath can take: nested
// directories, a file, absolute, relative and chained links, a link to a
// file, a dangling link and a loop. It returns the resolved root.
func linkTree(t testing.TB) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "a", "b", "c"), 0o755))
	must(os.WriteFile(filepath.Join(root, "a", "b", "file"), nil, 0o644))
	must(os.Symlink(filepath.Join(root, "a", "b"), filepath.Join(root, "abs")))
	must(os.Symlink("a/b", filepath.Join(root, "rel")))
	must(os.Symlink("rel", filepath.Join(root, "chain")))
	must(os.Symlink("../b/file", filepath.Join(root, "a", "b", "c", "tofile")))
	must(os.Symlink("nowhere", filepath.Join(root, "dangling")))
	must(os.Symlink("loop", filepath.Join(root, "loop")))
	return root
}

// TestRealPathIsEvalSymlinks: on every shape, the short way gives what
// filepath.EvalSymlinks gives, and fails where it fails.
func TestRealPathIsEvalSymlinks(t *testing.T) {
	root := linkTree(t)
	for _, rel := range []string{
		"", "a", "a/b/c", "a/b/file", "abs", "abs/c", "rel/c", "chain", "chain/c",
		"a/b/c/tofile", "dangling", "loop", "missing", "a/b/file/x", "chain/missing",
	} {
		path := filepath.Join(root, rel)
		want, wantErr := filepath.EvalSymlinks(path)
		got, err := realPath(path)
		if (err == nil) != (wantErr == nil) || got != want {
			t.Errorf("realPath(%s) = %q, %v; EvalSymlinks gives %q, %v", rel, got, err, want, wantErr)
		}
	}
	if got, err := realPath("/"); err != nil || got != "/" {
		t.Errorf("realPath(/) = %q, %v", got, err)
	}
}

// BenchmarkResolve: the gateway resolves the etc-hosts and
// termination-log host paths of every container it creates.
func BenchmarkResolve(b *testing.B) {
	root := linkTree(b)
	dir := filepath.Join(root, "pods", "0f3c9a52-5d0e-4c2e-9a57-1d1b3c7e2f10", "containers", "sleep")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "8b1a9953")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("Resolve", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if Resolve(path) != path {
				b.Fatal("moved")
			}
		}
	})
	b.Run("EvalSymlinks", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := filepath.EvalSymlinks(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}
