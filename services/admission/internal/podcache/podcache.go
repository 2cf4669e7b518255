// Package podcache keeps the pods splitlet-admission has decoded from
// AdmitRequests, keyed by their bytes and by reference (UID and SHA-256
// digest of the bytes), with what admission derives from each (its
// predicate.ActivePodInfo) and the bytes themselves. Sync's active set
// changes rarely, so sync sends each active pod in full once and by
// reference afterwards; a hit saves decoding the pod, computing its
// requests, and encoding it again for the plugins.
//
//	pods := &podcache.Cache{}
//	pods.Reserve(len(refs) + len(full))   // once per request
//	held, missing := pods.Resolve(refs)   // the pods sent by reference
//	pod, ref, err := pods.DecodeRef(b)    // the pods sent in full
//	pods.PutSet(refs, active)             // the whole active set, by digest
//	active, ok := pods.Set(digest)        // the next request's, if unchanged
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
	"crypto/sha256"
	"sync"

	v1 "k8s.io/api/core/v1"

	sdk "github.com/splitlet/splitlet/services/admission/plugin"
	"github.com/splitlet/splitlet/services/admission/plugin/gencache"
	"github.com/splitlet/splitlet/services/admission/predicate"
)

// Ref names a pod the way AdmitRequest's ActivePod refers to it: its UID
// and the SHA-256 digest of its encoding.
type Ref struct {
	UID    string
	Digest [sha256.Size]byte
}

type entry struct {
	raw []byte
	// key is raw as the byBytes key, made once: converting raw on every
	// touch would copy the pod's bytes.
	key  string
	pod  *v1.Pod
	info *predicate.ActivePodInfo
	ref  Ref
	// gen is byRef's generation when the entry was last touched: while
	// it is current the entry is in every index's current generation,
	// and touching it again would only hash its bytes once more.
	gen uint64
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
	// byRef is the third index, kept in step with the other two.
	byRef gencache.Cache[Ref, *entry]
	// sets are the active sets kept by digest (PutSet, Set), least
	// recently used first.
	sets []*heldSet
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
	pod, _, err := c.DecodeRef(b)
	return pod, err
}

// DecodeRef is Decode that also returns the pod's reference: its UID and
// the SHA-256 digest of b. Later requests may name the pod by that
// reference alone (Resolve).
func (c *Cache) DecodeRef(b []byte) (*v1.Pod, Ref, error) {
	c.mu.Lock()
	e, ok := gencache.GetBytes(&c.byBytes, b)
	if ok {
		c.touchLocked(e)
	}
	c.mu.Unlock()
	if ok {
		return e.pod, e.ref, nil
	}

	pod := &v1.Pod{}
	if err := pod.Unmarshal(b); err != nil {
		return nil, Ref{}, err
	}
	// The request's buffer belongs to the RPC; the cache keeps its own.
	e = &entry{raw: bytes.Clone(b), key: string(b), pod: pod, info: predicate.NewActivePodInfo(pod),
		ref: Ref{UID: string(pod.UID), Digest: sha256.Sum256(b)}}
	c.mu.Lock()
	c.byBytes.Put(e.key, e)
	c.byPod.Put(pod, e)
	c.byRef.Put(e.ref, e)
	e.gen = c.byRef.Generation()
	c.mu.Unlock()
	return pod, e.ref, nil
}

// Resolve returns the pods refs name, in order, when the cache holds every
// one of them; otherwise it returns the indexes of refs of the pods it does
// not hold, and nil pods. Every ref is looked up before any is promoted, so
// promoting a request's first pods cannot start a generation that drops
// its last ones; with Reserve called for the request, every pod of it is
// still held at the next request.
func (c *Cache) Resolve(refs []Ref) (pods []*v1.Pod, missing []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	entries := make([]*entry, len(refs))
	for i, r := range refs {
		e, ok := c.byRef.Peek(r)
		if !ok {
			missing = append(missing, i)
			continue
		}
		entries[i] = e
	}
	if len(missing) > 0 {
		return nil, missing
	}
	pods = make([]*v1.Pod, len(refs))
	for i, e := range entries {
		c.touchLocked(e)
		pods[i] = e.pod
	}
	return pods, nil
}

// Reserve readies the cache for a request of n pods: a generation holds at
// least twice that many, so one request starts at most one generation and
// every pod it named survives until the next request, whatever the size of
// the node. It never shrinks a generation.
func (c *Cache) Reserve(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if limit := max(gencache.DefaultLimit, 2*n); limit > c.byRef.Limit {
		c.byBytes.Limit, c.byPod.Limit, c.byRef.Limit = limit, limit, limit
	}
}

// touchLocked keeps e in the current generation of every index, so the
// three forget it at the same time. The three get the same puts and so
// start generations together.
func (c *Cache) touchLocked(e *entry) {
	if e.gen == c.byRef.Generation() {
		return
	}
	c.byBytes.Touch(e.key, e)
	c.byPod.Touch(e.pod, e)
	c.byRef.Touch(e.ref, e)
	e.gen = c.byRef.Generation()
}

// lookup finds the entry of a pod object without promoting it: the
// request that named the pod promoted it already, and a promotion here
// would move one index out of step with the others.
func (c *Cache) lookup(pod *v1.Pod) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, _ := c.byPod.Peek(pod)
	return e
}

// ActivePodInfos implements predicate.ActivePodInfoSource: for each pod
// this cache made, the summary computed when it was decoded, all under one
// hold of the lock.
func (c *Cache) ActivePodInfos(pods []*v1.Pod, infos []*predicate.ActivePodInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, pod := range pods {
		if e, ok := c.byPod.Peek(pod); ok {
			infos[i] = e.info
		}
	}
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
