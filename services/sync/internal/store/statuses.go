package store

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var statusesBucket = []byte("statuses")

// KeptStatus is what sync keeps of a pod across its own restarts, as the
// kubelet's status manager and the API server keep it for the kubelet: the
// last generated status (start time, conditions with their transition
// times, pod IPs, container states) and, for a static pod, the creation
// time sync gave it when it first saw it.
type KeptStatus struct {
	Status            v1.PodStatus `json:"status"`
	CreationTimestamp metav1.Time  `json:"creationTimestamp,omitzero"`
}

// PutStatuses stores or, for a nil value, forgets the kept status of each
// pod, in one transaction. They are on disk when it returns nil.
func (s *Store) PutStatuses(kept map[types.UID]*KeptStatus) error {
	raws := make(map[types.UID][]byte, len(kept))
	for uid, k := range kept {
		if k == nil {
			raws[uid] = nil
			continue
		}
		raw, err := json.Marshal(k)
		if err != nil {
			return fmt.Errorf("encode status of pod %s: %w", uid, err)
		}
		raws[uid] = raw
	}
	return s.updateTx(func(tx *bolt.Tx) error {
		b := tx.Bucket(statusesBucket)
		for uid, raw := range raws {
			var err error
			if raw == nil {
				err = b.Delete([]byte(uid))
			} else {
				err = b.Put([]byte(uid), raw)
			}
			if err != nil {
				return fmt.Errorf("store status of pod %s: %w", uid, err)
			}
		}
		return nil
	})
}

// Statuses returns every kept status by pod UID.
func (s *Store) Statuses() (map[types.UID]KeptStatus, error) {
	out := map[types.UID]KeptStatus{}
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(statusesBucket).ForEach(func(k, raw []byte) error {
			var ks KeptStatus
			if err := json.Unmarshal(raw, &ks); err != nil {
				return fmt.Errorf("status of pod %s: %w", k, err)
			}
			out[types.UID(k)] = ks
			return nil
		})
	})
	return out, err
}
