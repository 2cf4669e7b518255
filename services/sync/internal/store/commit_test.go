package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	bolt "go.etcd.io/bbolt"
)

// Concurrent writers share commits, yet every write that returned nil is in
// the file once the store is reopened.
func TestConcurrentWritesAreDurable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pods.db")
	st, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := st.Put(pod("default", fmt.Sprintf("w%d-%d", w, i), "busybox")); err != nil {
					t.Error(err)
				}
			}
			// One removal per writer, racing the other writers' puts.
			if err := st.Delete("default", fmt.Sprintf("w%d-0", w)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pods, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	if want := writers * (each - 1); len(pods) != want {
		t.Errorf("after reopen %d pods, want %d", len(pods), want)
	}
	for _, p := range pods {
		if strings.HasSuffix(p.Name, "-0") {
			t.Errorf("deleted pod %s is back after reopen", p.Name)
		}
	}
}

// A write that fails fails alone: the writes that shared its transaction
// are committed without it.
func TestCommitIsolatesAFailingWrite(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "pods.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bad := errors.New("bad write")
	put := func(name string) *write {
		return &write{result: make(chan error, 1), apply: func(tx *bolt.Tx) error {
			return tx.Bucket(podsBucket).Put(key("default", name), []byte(`{"metadata":{"name":"`+name+`","namespace":"default"}}`))
		}}
	}
	failing := &write{result: make(chan error, 1), apply: func(*bolt.Tx) error { return bad }}
	batch := []*write{put("a"), failing, put("b")}
	// Called directly, so the three surely share one transaction.
	st.commit(batch)
	for i, w := range batch {
		got := <-w.result
		if wantErr := w == failing; (got != nil) != wantErr || (wantErr && !errors.Is(got, bad)) {
			t.Errorf("write %d: result %v, want failure only for the failing write", i, got)
		}
	}
	pods, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 2 || pods[0].Name != "a" || pods[1].Name != "b" {
		t.Errorf("stored %d pods, want a and b", len(pods))
	}
}

// A pod too big for a bbolt key fails through Put, and the store keeps
// working.
func TestPutTooLargeKeyFails(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "pods.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Put(pod("default", strings.Repeat("x", bolt.MaxKeySize+1), "busybox")); err == nil {
		t.Fatal("Put of an oversized key succeeded")
	}
	if err := st.Put(pod("default", "a", "busybox")); err != nil {
		t.Fatalf("Put after a failed Put: %v", err)
	}
}

func TestWriteAfterCloseIsUnavailable(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "pods.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Put(pod("default", "a", "busybox")); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("Put after Close: %v, want ErrUnavailable", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
