package kuberuntime

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestResolvConfCacheFollowsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	write := func(data string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	c := &resolvConfCache{}
	t0 := time.Unix(1_700_000_000, 0)
	write("nameserver 10.0.0.1\nsearch a.example\n", t0)
	got, err := c.get(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Servers, []string{"10.0.0.1"}) || !slices.Equal(got.Searches, []string{"a.example"}) {
		t.Fatalf("first read = %v", got)
	}
	// The caller owns what it gets: changing it must not reach the cache.
	got.Servers = append(got.Servers[:0], "6.6.6.6")
	again, err := c.get(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Servers, []string{"10.0.0.1"}) {
		t.Fatalf("cached copy was changed by a caller: %v", again.Servers)
	}
	// An edit (same size, new mtime) is seen by the next call.
	write("nameserver 10.0.0.2\nsearch a.example\n", t0.Add(time.Second))
	edited, err := c.get(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(edited.Servers, []string{"10.0.0.2"}) {
		t.Fatalf("after an edit = %v, want 10.0.0.2", edited.Servers)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := c.get(path); err == nil {
		t.Fatal("a missing resolv.conf gave no error")
	}
}
