package plugin

import (
	"sync"

	v1 "k8s.io/api/core/v1"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
)

// The active pods change little between two admissions, and encoding and
// decoding them is most of the cost of an out-of-process call (about 4 µs
// to encode and 10 µs to decode a small pod: over 1.5 ms for a full node of
// 110). Both sides therefore keep the last generation of work.

// cacheGeneration bounds each generation of a cache; with two generations
// kept, at most twice this many pods are held. It is well above the
// kubelet's default of 110 pods per node.
const cacheGeneration = 1024

// decodeCache maps a pod's encoding to its decoded form. It is keyed by
// content, so a hit is always exact; the decoded pods are shared between
// calls, which is why plugins must not mutate a Request.
type decodeCache struct {
	mu        sync.Mutex
	cur, prev map[string]*v1.Pod
}

func (c *decodeCache) decode(b []byte) (*v1.Pod, error) {
	c.mu.Lock()
	if p, ok := c.cur[string(b)]; ok {
		c.mu.Unlock()
		return p, nil
	}
	if p, ok := c.prev[string(b)]; ok {
		c.putLocked(b, p)
		c.mu.Unlock()
		return p, nil
	}
	c.mu.Unlock()

	p := &v1.Pod{}
	if err := p.Unmarshal(b); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.putLocked(b, p)
	c.mu.Unlock()
	return p, nil
}

func (c *decodeCache) putLocked(b []byte, p *v1.Pod) {
	if c.cur == nil || len(c.cur) >= cacheGeneration {
		c.prev, c.cur = c.cur, make(map[string]*v1.Pod, len(c.cur))
	}
	c.cur[string(b)] = p
}

// encodeKey identifies a pod object the host has already encoded. The
// pointer is the identity; UID and ResourceVersion guard against a pointer
// reused for another pod or an object updated from the API server in place.
type encodeKey struct {
	pod             *v1.Pod
	uid             string
	resourceVersion string
}

// Encoder encodes requests for the host, reusing the encoding of an active
// pod object it encoded before. It relies on the convention the kubelet's
// pod manager follows: a changed pod is a new object, never an in-place
// mutation of one already handed to admission. Callers that mutate pods in
// place must use EncodeRequest instead. An Encoder is safe for concurrent
// use; the zero value is ready.
type Encoder struct {
	mu        sync.Mutex
	cur, prev map[encodeKey][]byte
}

// Encode is EncodeRequest with the active pods' encodings cached.
func (e *Encoder) Encode(r *Request) (*pluginv1.AdmitRequest, error) {
	return encodeRequest(r, e.encodePod)
}

func (e *Encoder) encodePod(p *v1.Pod) ([]byte, error) {
	k := encodeKey{pod: p, uid: string(p.UID), resourceVersion: p.ResourceVersion}
	e.mu.Lock()
	b, ok := e.cur[k]
	if !ok {
		if b, ok = e.prev[k]; ok {
			e.putLocked(k, b)
		}
	}
	e.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := p.Marshal()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.putLocked(k, b)
	e.mu.Unlock()
	return b, nil
}

func (e *Encoder) putLocked(k encodeKey, b []byte) {
	if e.cur == nil || len(e.cur) >= cacheGeneration {
		e.prev, e.cur = e.cur, make(map[encodeKey][]byte, len(e.cur))
	}
	e.cur[k] = b
}
