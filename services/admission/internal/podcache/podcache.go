// Package podcache keeps the pods splitlet-admission has decoded from
// AdmitRequests, keyed by their bytes, with what admission derives from each
// (its predicate.ActivePodInfo) and the bytes themselves. Sync sends the
// same active pods on nearly every call (its active set changes rarely), so
// a hit saves decoding the pod, computing its requests, and encoding it
// again for the plugins.
//
//	pods := &podcache.Cache{}
//	pod, err := pods.Decode(b)          // the server, for every pod of a request
//	predicate.Options{ActivePodInfos: pods, ...}
//	pluginhost.Options{Encodings: pods, ...}
//
// Entries are keyed by content, so new bytes are a new entry and a hit is
// always exact; lookups by object (ActivePodInfo, Encoding) answer only for
// pod objects this cache made. Decoded pods are shared between admissions
// and must not be changed, which every handler's contract already requires
// (lifecycle.PodAdmitHandler must not mutate its attributes).
package podcache

import (
	"bytes"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/admission/internal/gencache"
	sdk "github.com/splitlet/splitlet/services/admission/plugin"
	"github.com/splitlet/splitlet/services/admission/predicate"
)

type entry struct {
	raw  []byte
	pod  *v1.Pod
	info *predicate.ActivePodInfo
}

// Cache holds the last two generations of decoded pods (at most
// 2*gencache.DefaultLimit). It is safe for concurrent use; the zero value
// is ready.
type Cache struct {
	mu      sync.Mutex
	byBytes gencache.Cache[string, *entry]
	// byPod indexes the same entries by object; it is put and promoted
	// together with byBytes, so both forget an entry at the same time.
	byPod gencache.Cache[*v1.Pod, *entry]
}

var (
	_ predicate.ActivePodInfoSource = (*Cache)(nil)
	_ sdk.EncodingSource            = (*Cache)(nil)
)

// Decode returns the pod whose Kubernetes protobuf encoding is b, decoding
// it only when these bytes were not seen in the last two generations. It
// returns the decoding error of bytes that are not a Pod, and caches
// nothing for them. b is not retained.
func (c *Cache) Decode(b []byte) (*v1.Pod, error) {
	c.mu.Lock()
	e, ok := gencache.GetBytes(&c.byBytes, b)
	if ok {
		c.touchLocked(e)
	}
	c.mu.Unlock()
	if ok {
		return e.pod, nil
	}

	pod := &v1.Pod{}
	if err := pod.Unmarshal(b); err != nil {
		return nil, err
	}
	// The request's buffer belongs to the RPC; the cache keeps its own.
	e = &entry{raw: bytes.Clone(b), pod: pod, info: predicate.NewActivePodInfo(pod)}
	c.mu.Lock()
	c.byBytes.Put(string(e.raw), e)
	c.byPod.Put(pod, e)
	c.mu.Unlock()
	return pod, nil
}

// touchLocked keeps e's object index in step with a hit by bytes.
func (c *Cache) touchLocked(e *entry) {
	if _, ok := c.byPod.Get(e.pod); !ok {
		c.byPod.Put(e.pod, e)
	}
}

func (c *Cache) lookup(pod *v1.Pod) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, _ := c.byPod.Get(pod)
	return e
}

// ActivePodInfo implements predicate.ActivePodInfoSource: the summary
// computed when pod was decoded, or nil for a pod this cache did not make.
func (c *Cache) ActivePodInfo(pod *v1.Pod) *predicate.ActivePodInfo {
	if e := c.lookup(pod); e != nil {
		return e.info
	}
	return nil
}

// Encoding implements plugin.EncodingSource: the bytes pod was decoded
// from, which are its Kubernetes protobuf encoding, so plugins are sent the
// very bytes sync sent.
func (c *Cache) Encoding(pod *v1.Pod) ([]byte, bool) {
	if e := c.lookup(pod); e != nil {
		return e.raw, true
	}
	return nil, false
}

// Len is the number of pods held (see gencache.Cache.Len).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byBytes.Len()
}
