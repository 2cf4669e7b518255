package podcache

import (
	"crypto/sha256"

	v1 "k8s.io/api/core/v1"
)

// SetDigest is the digest of an active set as AdmitRequest.active_set
// names it: SHA-256 of the set's pod digests concatenated in order.
func SetDigest(refs []Ref) [sha256.Size]byte {
	h := sha256.New()
	for i := range refs {
		h.Write(refs[i].Digest[:])
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// emptySet is the digest of no pods, which names the empty set without
// being held.
var emptySet = SetDigest(nil)

// setsHeld bounds the sets the cache keeps: one per client is what sync
// needs (its active set changes rarely, and a changed set replaces the
// last); a few more let the tests' and tools' clients come and go without
// pushing sync's set out.
const setsHeld = 8

// heldSet is an active set kept under its digest, with the entries of its
// pods so that naming the set keeps them current in every index.
type heldSet struct {
	digest  [sha256.Size]byte
	pods    []*v1.Pod
	refs    []Ref
	entries []*entry
}

// PutSet keeps pods, just resolved or decoded for refs (in the same
// order), as the active set named digest, which is SetDigest(refs) (the
// caller checked a client's digest with it), forgetting the set used least
// recently beyond setsHeld, and says whether it kept it: a pod this cache
// did not make is not kept, and then neither is the set. The cache keeps
// refs and pods; the caller must not change them afterwards.
func (c *Cache) PutSet(digest [sha256.Size]byte, refs []Ref, pods []*v1.Pod) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	entries := make([]*entry, len(pods))
	for i, p := range pods {
		e, ok := c.byPod.Peek(p)
		if !ok || e.ref != refs[i] {
			return false
		}
		entries[i] = e
	}
	set := &heldSet{digest: digest, pods: pods, refs: refs, entries: entries}
	for i, s := range c.sets {
		if s.digest == digest {
			c.sets = append(c.sets[:i], c.sets[i+1:]...)
			break
		}
	}
	if len(c.sets) == setsHeld {
		c.sets = c.sets[1:]
	}
	c.sets = append(c.sets, set)
	return true
}

// Set returns the pods of the active set kept under digest and their
// references, in the same order (what a change to the set,
// AdmitRequest.active_change, applies to), or false when the cache does not
// hold it; the digest of no pods is always the empty set. Naming a set
// keeps it and its pods as if they had been resolved one by one. The
// slices are shared: callers must not change them, and appending to them
// copies.
func (c *Cache) Set(digest [sha256.Size]byte) ([]*v1.Pod, []Ref, bool) {
	if digest == emptySet {
		return nil, nil, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.sets) - 1; i >= 0; i-- {
		s := c.sets[i]
		if s.digest != digest {
			continue
		}
		if i != len(c.sets)-1 {
			c.sets = append(append(c.sets[:i], c.sets[i+1:]...), s)
		}
		for _, e := range s.entries {
			c.touchLocked(e)
		}
		n := len(s.pods)
		return s.pods[:n:n], s.refs[:n:n], true
	}
	return nil, nil, false
}
