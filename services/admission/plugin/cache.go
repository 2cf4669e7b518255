package plugin

import (
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
	"github.com/splitlet/splitlet/services/admission/plugin/gencache"
)

// The active pods change little between two admissions, and encoding and
// decoding them is most of the cost of an out-of-process call (about 4 µs
// to encode and 10 µs to decode a small pod: over 1.5 ms for a full node of
// 110). Both sides therefore keep the last generation of work.

// cacheGeneration bounds each generation of a cache; with two generations
// kept, at most twice this many pods are held.
const cacheGeneration = gencache.DefaultLimit

// decodeCache maps a pod's encoding to its decoded form. It is keyed by
// content, so a hit is always exact; the decoded pods are shared between
// calls, which is why plugins must not mutate a Request.
type decodeCache struct {
	mu   sync.Mutex
	pods gencache.Cache[string, *v1.Pod]
}

func (c *decodeCache) decode(b []byte) (*v1.Pod, error) {
	c.mu.Lock()
	p, ok := gencache.GetBytes(&c.pods, b)
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p = &v1.Pod{}
	if err := p.Unmarshal(b); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.pods.Put(string(b), p)
	c.mu.Unlock()
	return p, nil
}

// encodeKey identifies a pod object the host has already encoded. The
// pointer is the identity; UID and ResourceVersion guard against a pointer
// reused for another pod or an object updated from the API server in place.
type encodeKey struct {
	pod             *v1.Pod
	uid             string
	resourceVersion string
}

// EncodingSource knows the Kubernetes protobuf encoding some pod objects
// were decoded from, so they need not be encoded again: splitlet-admission
// decodes the active pods of an AdmitRequest from bytes that are already
// that encoding.
type EncodingSource interface {
	// Encoding returns the bytes pod was decoded from, and false for a pod
	// it does not know. The bytes are shared and must not be changed.
	Encoding(pod *v1.Pod) ([]byte, bool)
}

// Encoder encodes requests for the host, reusing the encoding of an active
// pod object it encoded before. It relies on the convention the kubelet's
// pod manager follows: a changed pod is a new object, never an in-place
// mutation of one already handed to admission. Callers that mutate pods in
// place must use EncodeRequest instead. An Encoder is safe for concurrent
// use; the zero value is ready.
type Encoder struct {
	// Source, when set, is asked first for the pod and every active pod;
	// the pods it knows are not encoded (nor cached) here.
	Source EncodingSource

	mu   sync.Mutex
	pods gencache.Cache[encodeKey, []byte]
	// lastPods and lastActive are the active pods of the latest Prepare
	// (by object, UID and resourceVersion, as the cache keys them) and
	// their encodings: the next call with the same pods in the same order,
	// the common call, reuses the encodings (and the plugins' senders
	// recognise them, sentSet.holds) without a lookup per pod.
	lastPods   []encodeKey
	lastActive []preparedPod
}

// Encode is EncodeRequest with the active pods' encodings cached.
func (e *Encoder) Encode(r *Request) (*pluginv1.AdmitRequest, error) {
	p, err := e.Prepare(r)
	if err != nil {
		return nil, err
	}
	return p.wholeSet(), nil
}

// Prepare encodes r once for every plugin a host asks, with the active
// pods' encodings cached; GRPCClient.AdmitPrepared sends it.
func (e *Encoder) Prepare(r *Request) (*Prepared, error) {
	encodePod := (*v1.Pod).Marshal
	if e.Source != nil {
		encodePod = func(p *v1.Pod) ([]byte, error) {
			if b, ok := e.Source.Encoding(p); ok {
				return b, nil
			}
			return p.Marshal()
		}
	}
	e.mu.Lock()
	var active []preparedPod
	if len(r.ActivePods) > 0 && slices.EqualFunc(r.ActivePods, e.lastPods, func(p *v1.Pod, k encodeKey) bool { return keyOf(p) == k }) {
		active = e.lastActive
	}
	e.mu.Unlock()
	if active != nil {
		return prepareWith(r, encodePod, active)
	}
	out, err := prepare(r, encodePod, e.encodeActive)
	if err != nil {
		return nil, err
	}
	keys := make([]encodeKey, len(r.ActivePods))
	for i, p := range r.ActivePods {
		keys[i] = keyOf(p)
	}
	e.mu.Lock()
	e.lastPods, e.lastActive = keys, out.active
	e.mu.Unlock()
	return out, nil
}

func keyOf(p *v1.Pod) encodeKey {
	return encodeKey{pod: p, uid: string(p.UID), resourceVersion: p.ResourceVersion}
}

func (e *Encoder) encodeActive(p *v1.Pod) ([]byte, error) {
	if e.Source != nil {
		if b, ok := e.Source.Encoding(p); ok {
			return b, nil
		}
	}
	k := keyOf(p)
	e.mu.Lock()
	b, ok := e.pods.Get(k)
	e.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := p.Marshal()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.pods.Put(k, b)
	e.mu.Unlock()
	return b, nil
}
