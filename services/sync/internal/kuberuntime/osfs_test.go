package kuberuntime

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestOSFSMkdirAll: mkdirAll must create what os.MkdirAll creates and fail
// where it fails, with the same permissions on every level it made.
func TestOSFSMkdirAll(t *testing.T) {
	umask := os.FileMode(syscall.Umask(0))
	syscall.Umask(int(umask))
	for _, tc := range []struct {
		desc    string
		files   []string // made before, as regular files
		dirs    []string // made before
		path    string
		wantErr bool
	}{
		{desc: "every level new", path: "pods/u1/containers/c"},
		{desc: "parent exists", dirs: []string{"pods/u1/containers"}, path: "pods/u1/containers/c"},
		{desc: "the directory exists", dirs: []string{"pods/u1/containers/c"}, path: "pods/u1/containers/c"},
		{desc: "a file in its place", dirs: []string{"pods/u1"}, files: []string{"pods/u1/containers"}, path: "pods/u1/containers", wantErr: true},
		{desc: "a file as a parent", dirs: []string{"pods"}, files: []string{"pods/u1"}, path: "pods/u1/containers/c", wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range tc.dirs {
				if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(root, f), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(root, tc.path)
			err := OSFS{}.MkdirAll(path, 0o750)
			if (err != nil) != tc.wantErr {
				t.Fatalf("MkdirAll(%s): error %v, want error %v", tc.path, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			fi, err := os.Stat(path)
			if err != nil || !fi.IsDir() {
				t.Fatalf("%s is not a directory after MkdirAll: %v", tc.path, err)
			}
			// Levels this call made get perm less the umask, as with
			// os.MkdirAll; levels that existed keep theirs.
			for p := path; p != root; p = filepath.Dir(p) {
				rel, _ := filepath.Rel(root, p)
				want := 0o750 &^ umask
				for _, d := range tc.dirs {
					if d == rel || strings.HasPrefix(d, rel+"/") {
						want = 0o700 &^ umask
					}
				}
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm(); got != want {
					t.Errorf("%s: mode %v, want %v", rel, got, want)
				}
			}
		})
	}
}

// TestOSFSMkdirAllConcurrent: two containers of one pod starting at once
// create the same pod directory; neither may fail.
func TestOSFSMkdirAllConcurrent(t *testing.T) {
	root := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			errs <- OSFS{}.MkdirAll(filepath.Join(root, "pods", "u1", "containers", string(rune('a'+i%4))), 0o750)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestOSFSCreateFile: the file gets exactly perm, whatever the umask, and
// an existing one is truncated.
func TestOSFSCreateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "termination")
	if err := os.WriteFile(path, []byte("old message"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (OSFS{}).CreateFile(path, 0o666); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o666 || fi.Size() != 0 {
		t.Errorf("mode %v size %d, want -rw-rw-rw- and 0", fi.Mode().Perm(), fi.Size())
	}
}

// TestOSFSWriteFile: a longer file is replaced whole, the mode is exactly
// perm whatever the umask, and a missing directory is an error naming the
// path.
func TestOSFSWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "etc-hosts")
	if err := os.WriteFile(path, []byte("a much longer old hosts file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withUmask(t, 0o077, func() {
		if err := (OSFS{}).WriteFile(path, []byte("127.0.0.1\tlocalhost\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "127.0.0.1\tlocalhost\n" {
		t.Errorf("content %q", got)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want -rw-r--r--", fi.Mode().Perm())
	}
	missing := filepath.Join(dir, "gone", "etc-hosts")
	err = (OSFS{}).WriteFile(missing, nil, 0o644)
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != missing || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err %v, want a not-exist PathError for %s", err, missing)
	}
}

// withUmask runs fn with the process's umask set to mask, as sync may run
// under (022 is the usual default), and restores it.
func withUmask(t *testing.T, mask int, fn func()) {
	t.Helper()
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	fn()
}

// TestOSFSMkdirAllExact: a directory the call creates gets exactly perm
// whatever the umask; one that exists keeps the mode it has.
func TestOSFSMkdirAllExact(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		existing os.FileMode // a directory already there with this mode; 0 for none
		file     bool        // a regular file already there
		path     string
		want     os.FileMode
		wantErr  bool
	}{
		{desc: "new with its parents", path: "pods/u1/volumes/kubernetes.io~empty-dir/cache", want: 0o777},
		{desc: "new under an existing parent", path: "cache", want: 0o777},
		{desc: "an existing directory keeps its mode", existing: 0o700, path: "cache", want: 0o700},
		{desc: "a file in its place", file: true, path: "cache", wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, tc.path)
			if tc.existing != 0 {
				if err := os.Mkdir(path, tc.existing); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, tc.existing); err != nil {
					t.Fatal(err)
				}
			}
			if tc.file {
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			withUmask(t, 0o022, func() { err = OSFS{}.MkdirAllExact(path, 0o777) })
			if (err != nil) != tc.wantErr {
				t.Fatalf("MkdirAllExact(%s): error %v, want error %v", tc.path, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			fi, err := os.Stat(path)
			if err != nil || !fi.IsDir() {
				t.Fatalf("%s is not a directory: %v", tc.path, err)
			}
			if got := fi.Mode().Perm(); got != tc.want {
				t.Errorf("mode %v, want %v", got, tc.want)
			}
		})
	}
}

// BenchmarkPodDirectories makes the five directories a pod start makes (its
// log directory and its container's, pods/<uid> and, under it, the
// termination message's containers/<name>), one pod per iteration, under
// $SPLITLET_BENCH_DIR or the test's temporary directory: what they cost
// depends on that filesystem (BENCHMARKS.md, twentieth session).
func BenchmarkPodDirectories(b *testing.B) {
	root := b.TempDir()
	if dir := os.Getenv("SPLITLET_BENCH_DIR"); dir != "" {
		var err error
		if root, err = os.MkdirTemp(dir, "bench-pod-dirs-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(root) })
	}
	for _, dir := range []string{"logs", "pods"} {
		if err := os.Mkdir(filepath.Join(root, dir), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		uid := "ns_pod-" + strconv.Itoa(i) + "_0b7f5c3e-8d1a-4c7e-9f6b-2a5d4e3c1b0a"
		i++
		for _, dir := range []string{
			filepath.Join(root, "logs", uid),
			filepath.Join(root, "logs", uid, "app"),
			filepath.Join(root, "pods", uid),
			filepath.Join(root, "pods", uid, "containers", "app"),
		} {
			if err := mkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
	}
}
