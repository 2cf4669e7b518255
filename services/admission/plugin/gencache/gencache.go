// Package gencache is the bounded cache both ends of an admission share for
// work on active pods (decoding, encoding, per-pod summaries): a map that
// keeps two generations and forgets whatever was not used during the last
// one. Sync's active set changes rarely, so nearly every lookup hits the
// current generation, and pods that left the node fall out after at most
// two generations without any bookkeeping of their own.
//
//	var c gencache.Cache[string, *v1.Pod]
//	if p, ok := c.Get(key); ok { ... }
//	c.Put(key, decoded)
//
// A Cache is not safe for concurrent use; its owner holds a lock.
package gencache

// DefaultLimit bounds one generation when Limit is zero; with two
// generations kept, at most twice this many entries are held. It is well
// above the kubelet's default of 110 pods per node, so a node's whole active
// set fits in one generation.
const DefaultLimit = 1024

// Cache maps K to V with at most 2*Limit entries. The zero value is ready.
type Cache[K comparable, V any] struct {
	// Limit is the size of one generation; zero means DefaultLimit.
	Limit int

	cur, prev map[K]V
	// gen counts the generations started.
	gen uint64
}

// Get returns the value for k. A hit in the previous generation moves the
// entry into the current one, so what is still in use survives the next
// rotation.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	if v, ok := c.cur[k]; ok {
		return v, true
	}
	v, ok := c.prev[k]
	if ok {
		c.Put(k, v)
	}
	return v, ok
}

// Put stores v for k in the current generation, starting a new generation
// (and dropping the oldest) when the current one is full.
func (c *Cache[K, V]) Put(k K, v V) {
	limit := c.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if c.cur == nil || len(c.cur) >= limit {
		c.prev, c.cur = c.cur, make(map[K]V, len(c.cur))
		c.gen++
	}
	c.cur[k] = v
}

// Generation numbers the current generation: a key put while it is
// unchanged is in the current generation, which lets a caller skip
// touching it again (and hashing a long key for nothing).
func (c *Cache[K, V]) Generation() uint64 { return c.gen }

// Len is the number of entries held, over both generations (an entry
// promoted from the previous generation may count twice until it rotates
// out).
func (c *Cache[K, V]) Len() int { return len(c.cur) + len(c.prev) }

// Peek returns the value for k without promoting it, so a caller can look
// up a whole request's keys before any Put of its own starts a generation
// and drops keys it has yet to look up.
func (c *Cache[K, V]) Peek(k K) (V, bool) {
	if v, ok := c.cur[k]; ok {
		return v, true
	}
	v, ok := c.prev[k]
	return v, ok
}

// Touch keeps v for k in the current generation: a no-op when k is there
// already, a Put otherwise (a key only in the previous generation is
// promoted, and a key forgotten meanwhile is stored again).
func (c *Cache[K, V]) Touch(k K, v V) {
	if _, ok := c.cur[k]; !ok {
		c.Put(k, v)
	}
}

// Contains reports whether k is held, without promoting it.
func (c *Cache[K, V]) Contains(k K) bool {
	if _, ok := c.cur[k]; ok {
		return true
	}
	_, ok := c.prev[k]
	return ok
}

// GetBytes is Get for a cache keyed by content, looked up with the bytes
// themselves: indexing the maps with string(b) right here lets the compiler
// skip copying b into a string, which a call of Get(string(b)) cannot (a
// full node's worth of pods would be copied on every hit).
func GetBytes[V any](c *Cache[string, V], b []byte) (V, bool) {
	if v, ok := c.cur[string(b)]; ok {
		return v, true
	}
	v, ok := c.prev[string(b)]
	if ok {
		c.Put(string(b), v)
	}
	return v, ok
}
