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
	"time"

	"github.com/containerd/errdefs"
	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"
)

var podsBucket = []byte("pods")

// Store holds pods keyed by namespace/name. It is safe for concurrent use.
type Store struct {
	db *bolt.DB
}

// Open opens (creating if needed) the database file at path. It fails fast
// with errdefs.ErrUnavailable if another process holds the file, rather than
// waiting: two sync processes on one state directory would fight over pods.
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open %s: %v: %w", path, err, errdefs.ErrUnavailable)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(podsBucket)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("init %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func key(namespace, name string) []byte { return []byte(namespace + "/" + name) }

// Put writes every pod in one transaction: either all are stored or none.
func (s *Store) Put(pods ...*v1.Pod) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(podsBucket)
		for _, p := range pods {
			raw, err := json.Marshal(p)
			if err != nil {
				return fmt.Errorf("encode pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			if err := b.Put(key(p.Namespace, p.Name), raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// Delete removes a pod; deleting an absent pod is not an error.
func (s *Store) Delete(namespace, name string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(podsBucket).Delete(key(namespace, name))
	})
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
