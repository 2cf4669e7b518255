// Package store persists the pods applied through the PodService API in an
// embedded bbolt database, so that a restart of splitlet-sync loses nothing:
// the API source reloads them on start and the sync loop adopts their running
// containers.
//
//	st, err := store.Open(filepath.Join(stateDir, "pods.db"))
//	defer st.Close()
//	err = st.Put(pods...)   // all or nothing
//	pods, err := st.List()
package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	v1 "k8s.io/api/core/v1"
)

var podsBucket = []byte("pods")

// Store holds pods keyed by namespace/name. It is safe for concurrent use.
//
// Writes are group-committed: every Put or Delete is on disk (bbolt commits
// with an fsync) when it returns, but writes that arrive while a commit is
// under way wait for the next one and share its transaction and fsync. A
// lone writer commits at once; under concurrent writers (PodService Applies)
// the fsyncs per pod fall with the batch size. bbolt's DB.Batch does the
// same but waits up to MaxBatchDelay to fill a batch, a delay every lone
// Apply would pay.
type Store struct {
	db *bolt.DB

	mu     sync.RWMutex // read-held while sending on writes; write-held to close it
	closed bool
	writes chan *write
	done   chan struct{} // closed when the committer has returned
}

// write is one Put or Delete waiting for its commit. apply must be
// idempotent: it runs again in a new transaction if another write of its
// batch fails.
type write struct {
	apply  func(*bolt.Tx) error
	result chan error
}

// maxBatch bounds a transaction, so one commit's latency stays bounded.
const maxBatch = 1000

// ErrCorrupt is wrapped by Open's error when the database file is damaged:
// unreadable pages, a broken structure, or a record that does not decode.
// Sync then refuses to start rather than start empty, which would forget
// every pod applied through the API and remove their containers as
// orphans. docs/sync.md ("Recovering a damaged pods.db") says what an operator
// does.
var ErrCorrupt = errors.New("state file is corrupt")

// Open opens (creating if needed) the database file at path. It fails fast
// with errdefs.ErrUnavailable if another process holds the file, rather than
// waiting: two sync processes on one state directory would fight over pods.
// It checks the whole file first and fails with ErrCorrupt when it is
// damaged; it never panics on a damaged file.
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	db, err := openChecked(path)
	if err != nil {
		return nil, err
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{podsBucket, statusesBucket} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("init %s: %w", path, err)
	}
	s := &Store{db: db, writes: make(chan *write), done: make(chan struct{})}
	go s.commitLoop()
	return s, nil
}

// openChecked opens the file and checks it by reading every bucket and
// record and decoding each stored pod. bbolt panics on some damage (a
// freelist page of the wrong type, a branch page pointing at garbage) and a
// page beyond the end of a truncated file faults when touched through the
// mmap; both become ErrCorrupt here, through recover and SetPanicOnFault.
// bbolt's own Tx.Check is not used: it walks the pages in a goroutine of
// its own, where such a panic could not be recovered.
func openChecked(path string) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				closeQuietly(db)
			}
			db, err = nil, fmt.Errorf("%s: %w: %v", path, ErrCorrupt, r)
		}
	}()
	// bbolt takes an empty file for a new database; ours was truncated
	// (bbolt writes and syncs the first pages when it creates the file; a
	// crash inside that very first Open is the one other way, and then
	// nothing was stored, so moving the file aside loses nothing).
	if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
		return nil, fmt.Errorf("%s: %w: the file is empty (truncated?)", path, ErrCorrupt)
	}
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("open %s: %v: %w", path, err, errdefs.ErrUnavailable)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrVersionMismatch):
		return nil, fmt.Errorf("%s: %w: %v", path, ErrCorrupt, err)
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := db.View(checkTx); err != nil {
		closeQuietly(db)
		return nil, fmt.Errorf("%s: %w: %v", path, ErrCorrupt, err)
	}
	return db, nil
}

// checkTx reads every top-level bucket and decodes every stored pod and
// kept status.
func checkTx(tx *bolt.Tx) error {
	return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		return b.ForEach(func(k, raw []byte) error {
			var v any
			switch string(name) {
			case string(podsBucket):
				v = &v1.Pod{}
			case string(statusesBucket):
				v = &KeptStatus{}
			default:
				return nil
			}
			if err := json.Unmarshal(raw, v); err != nil {
				return fmt.Errorf("%s record %q: %w", name, k, err)
			}
			return nil
		})
	})
}

// closeQuietly closes a damaged database, which may itself panic.
func closeQuietly(db *bolt.DB) {
	defer func() { _ = recover() }()
	_ = db.Close()
}

// Close waits for the writes under way, then closes the database. Writes
// after Close fail with errdefs.ErrUnavailable.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.writes)
	s.mu.Unlock()
	<-s.done
	return s.db.Close()
}

func key(namespace, name string) []byte { return []byte(namespace + "/" + name) }

// Put writes every pod in one transaction: either all are stored or none.
// The pods are on disk when it returns nil.
func (s *Store) Put(pods ...*v1.Pod) error {
	// Encoded here, in the caller's goroutine, so concurrent callers use
	// the CPUs while the committer waits for the disk.
	raws := make([][]byte, len(pods))
	for i, p := range pods {
		raw, err := json.Marshal(p)
		if err != nil {
			return fmt.Errorf("encode pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		raws[i] = raw
	}
	return s.update(func(b *bolt.Bucket) error {
		for i, p := range pods {
			if err := b.Put(key(p.Namespace, p.Name), raws[i]); err != nil {
				return fmt.Errorf("store pod %s/%s: %w", p.Namespace, p.Name, err)
			}
		}
		return nil
	})
}

// Delete removes a pod; deleting an absent pod is not an error. The removal
// is on disk when it returns nil.
func (s *Store) Delete(namespace, name string) error {
	return s.update(func(b *bolt.Bucket) error {
		return b.Delete(key(namespace, name))
	})
}

// update runs apply on the pods bucket in the committer's next transaction
// (updateTx).
func (s *Store) update(apply func(*bolt.Bucket) error) error {
	return s.updateTx(func(tx *bolt.Tx) error { return apply(tx.Bucket(podsBucket)) })
}

// updateTx hands apply to the committer and waits until its transaction is
// committed.
func (s *Store) updateTx(apply func(*bolt.Tx) error) error {
	w := &write{apply: apply, result: make(chan error, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return fmt.Errorf("pod store closed: %w", errdefs.ErrUnavailable)
	}
	s.writes <- w
	s.mu.RUnlock()
	return <-w.result
}

// commitLoop commits writes until the writes channel is closed. Each
// transaction takes the write that woke it plus every write that queued up
// meanwhile: the writers blocked while the previous commit was syncing.
func (s *Store) commitLoop() {
	defer close(s.done)
	for w := range s.writes {
		batch := []*write{w}
	gather:
		for len(batch) < maxBatch {
			select {
			case w, ok := <-s.writes:
				if !ok {
					break gather
				}
				batch = append(batch, w)
			default:
				break gather
			}
		}
		s.commit(batch)
	}
}

// commit applies batch in one transaction and tells each write its result.
// A write whose apply fails gets its error and the others are committed
// again without it, so one bad write does not fail the writes it happened to
// share a transaction with (as bbolt's DB.Batch retries).
func (s *Store) commit(batch []*write) {
	for len(batch) > 0 {
		failed := -1
		err := s.db.Update(func(tx *bolt.Tx) error {
			for i, w := range batch {
				if err := w.apply(tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			// Committed, or the commit itself failed: the same for all.
			for _, w := range batch {
				w.result <- err
			}
			return
		}
		batch[failed].result <- err
		batch = append(batch[:failed:failed], batch[failed+1:]...)
	}
}

// Get returns one pod, or an error wrapping errdefs.ErrNotFound.
func (s *Store) Get(namespace, name string) (*v1.Pod, error) {
	var pod *v1.Pod
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(podsBucket).Get(key(namespace, name))
		if raw == nil {
			return fmt.Errorf("pod %s/%s: %w", namespace, name, errdefs.ErrNotFound)
		}
		pod = &v1.Pod{}
		return json.Unmarshal(raw, pod)
	})
	return pod, err
}

// List returns every stored pod, ordered by namespace/name. A record that no
// longer decodes is skipped and reported in the joined error, so one bad
// record does not hide the others.
func (s *Store) List() ([]*v1.Pod, error) {
	var pods []*v1.Pod
	var bad []error
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(podsBucket).ForEach(func(k, raw []byte) error {
			p := &v1.Pod{}
			if err := json.Unmarshal(raw, p); err != nil {
				bad = append(bad, fmt.Errorf("record %s: %w", k, err))
				return nil
			}
			pods = append(pods, p)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return pods, errors.Join(bad...)
}
