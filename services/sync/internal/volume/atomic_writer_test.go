package volume

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dirState is what a container would see in the volume: each user-visible
// file's content and mode, read through the symlinks.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(rel, "..") {
			if fi.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Stat(p)
			if err != nil {
				return err
			}
			if target.IsDir() {
				// filepath.Walk does not follow links: walk the target.
				real, err := filepath.EvalSymlinks(p)
				if err != nil {
					return err
				}
				return filepath.Walk(real, func(f string, fi os.FileInfo, err error) error {
					if err != nil || fi.IsDir() {
						return err
					}
					b, err := os.ReadFile(f)
					sub, _ := filepath.Rel(real, f)
					state[filepath.Join(rel, sub)] = fi.Mode().Perm().String() + " " + string(b)
					return err
				})
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			state[rel] = target.Mode().Perm().String() + " " + string(b)
		} else if !fi.IsDir() {
			t.Errorf("%s is not a symlink", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return state
}

func TestAtomicWriter(t *testing.T) {
	cases := []struct {
		desc   string
		writes []map[string]FileProjection
		want   map[string]string
	}{
		{
			desc:   "files with their modes",
			writes: []map[string]FileProjection{{"a": {Data: []byte("1"), Mode: 0o644}, "secret": {Data: []byte("s"), Mode: 0o400}}},
			want:   map[string]string{"a": "-rw-r--r-- 1", "secret": "-r-------- s"},
		},
		{
			desc:   "nested paths",
			writes: []map[string]FileProjection{{"dir/x": {Data: []byte("x"), Mode: 0o644}, "dir/sub/y": {Data: []byte("y"), Mode: 0o600}}},
			want:   map[string]string{"dir/x": "-rw-r--r-- x", "dir/sub/y": "-rw------- y"},
		},
		{
			desc: "a second write replaces the first and removes dropped keys",
			writes: []map[string]FileProjection{
				{"a": {Data: []byte("1"), Mode: 0o644}, "b": {Data: []byte("2"), Mode: 0o644}, "d/c": {Data: []byte("3"), Mode: 0o644}},
				{"a": {Data: []byte("one"), Mode: 0o644}, "e": {Data: []byte("5"), Mode: 0o644}},
			},
			want: map[string]string{"a": "-rw-r--r-- one", "e": "-rw-r--r-- 5"},
		},
		{
			desc: "a mode change alone is written",
			writes: []map[string]FileProjection{
				{"a": {Data: []byte("1"), Mode: 0o644}},
				{"a": {Data: []byte("1"), Mode: 0o440}},
			},
			want: map[string]string{"a": "-r--r----- 1"},
		},
		{
			desc: "an empty payload empties the volume",
			writes: []map[string]FileProjection{
				{"a": {Data: []byte("1"), Mode: 0o644}},
				{},
			},
			want: map[string]string{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			w, err := NewAtomicWriter(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.writes {
				if err := w.Write(p, nil); err != nil {
					t.Fatalf("Write: %v", err)
				}
			}
			got := dirState(t, dir)
			if !mapsEqual(got, tc.want) {
				t.Errorf("volume holds %v, want %v", got, tc.want)
			}
			// Exactly one timestamped directory, "..data" pointing at it.
			entries, _ := os.ReadDir(dir)
			var ts []string
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "..") && e.Name() != dataDirName {
					ts = append(ts, e.Name())
				}
			}
			target, err := os.Readlink(filepath.Join(dir, dataDirName))
			if err != nil {
				t.Fatal(err)
			}
			if len(ts) != 1 || ts[0] != target || !strings.HasPrefix(target, "..20") {
				t.Errorf("timestamped directories %v, ..data -> %s", ts, target)
			}
			fi, err := os.Stat(filepath.Join(dir, target))
			if err != nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("timestamped directory mode %v, %v; want 0755", fi.Mode(), err)
			}
			// Visible entries link through ..data.
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "..") {
					continue
				}
				l, err := os.Readlink(filepath.Join(dir, e.Name()))
				if err != nil || l != filepath.Join(dataDirName, e.Name()) {
					t.Errorf("%s -> %q, %v", e.Name(), l, err)
				}
			}
		})
	}
}

func TestAtomicWriterUnchangedKeepsDirectory(t *testing.T) {
	dir := t.TempDir()
	w, err := NewAtomicWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := map[string]FileProjection{"a": {Data: []byte("1"), Mode: 0o644}}
	if err := w.Write(p, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Readlink(filepath.Join(dir, dataDirName))
	// A removed visible link comes back without a new data directory.
	if err := os.Remove(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(p, nil); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if before != after {
		t.Errorf("..data moved from %s to %s for the same payload", before, after)
	}
	if got := dirState(t, dir); got["a"] != "-rw-r--r-- 1" {
		t.Errorf("volume holds %v", got)
	}
}

func TestAtomicWriterRejectsPaths(t *testing.T) {
	for _, p := range []string{"", "/abs", "../x", "a/../../x", "..hidden", strings.Repeat("x", 256)} {
		t.Run(p, func(t *testing.T) {
			dir := t.TempDir()
			w, _ := NewAtomicWriter(dir)
			if err := w.Write(map[string]FileProjection{p: {Mode: 0o644}}, nil); err == nil {
				t.Fatal("want an error")
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				names := make([]string, 0, len(entries))
				for _, e := range entries {
					names = append(names, e.Name())
				}
				slices.Sort(names)
				t.Errorf("wrote %v", names)
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func TestSetVolumeOwnership(t *testing.T) {
	dir := t.TempDir()
	w, err := NewAtomicWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The process's own group: chown to it needs no privilege.
	gid := int64(os.Getgid())
	payload := map[string]FileProjection{"token": {Data: []byte("t"), Mode: 0o600}, "d/ca.crt": {Data: []byte("c"), Mode: 0o400}}
	if err := w.Write(payload, func(d string) error { return SetVolumeOwnership(d, gid) }); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Readlink(filepath.Join(dir, dataDirName))
	// The same payload again: the modes SetVolumeOwnership changed do not
	// make it a new write.
	if err := w.Write(payload, func(d string) error { return SetVolumeOwnership(d, gid) }); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Readlink(filepath.Join(dir, dataDirName)); after != before {
		t.Errorf("..data moved from %s to %s for the same payload", before, after)
	}
	for path, want := range map[string]os.FileMode{"token": 0o640, "d/ca.crt": 0o440, "d": os.ModeDir | os.ModeSetgid | 0o755} {
		fi, err := os.Stat(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
}

// An emptyDir under an fsGroup: group-writable, setgid directories, and left
// alone once its root has the group and setgid (OnRootMismatch).
func TestSetWritableVolumeOwnership(t *testing.T) {
	dir := t.TempDir()
	gid := int64(os.Getgid())
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SetWritableVolumeOwnership(dir, gid); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{"sub/f": 0o660, "sub": os.ModeDir | os.ModeSetgid | 0o770} {
		fi, err := os.Stat(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
	// A file a container made 0600 afterwards keeps its mode.
	if err := os.WriteFile(filepath.Join(dir, "mine"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SetWritableVolumeOwnership(dir, gid); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "mine")); err != nil || fi.Mode() != 0o600 {
		t.Errorf("a container's file changed on the second setup: %v, %v", fi.Mode(), err)
	}
}
