package jsonfile

import (
	"os"
	"path/filepath"
	"testing"
)

type doc struct{ N int }

func TestSaveThenLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "doc.json")
	if err := Save(path, doc{N: 7}); err != nil {
		t.Fatal(err)
	}
	var got doc
	if err := Load(path, &got); err != nil || got.N != 7 {
		t.Fatalf("Load = %+v, %v; want N 7", got, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestLoadMissingFileIsNoError(t *testing.T) {
	got := doc{N: 3}
	if err := Load(filepath.Join(t.TempDir(), "absent.json"), &got); err != nil || got.N != 3 {
		t.Fatalf("Load = %+v, %v; want untouched, no error", got, err)
	}
}

func TestLoadCorruptFileIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(path, []byte(`{"N": 1`), 0o600); err != nil {
		t.Fatal(err)
	}
	var got doc
	if err := Load(path, &got); err == nil {
		t.Fatal("Load of a truncated file: no error")
	}
}
