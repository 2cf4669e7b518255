package plugin

import (
	"crypto/rand"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
)

// The host's side of active sets (the wire contract is ActiveSet in
// plugin.proto): a GRPCClient talks to one plugin process and remembers the
// newest set that process acknowledged, so that a call sends only the
// active pods that changed since. Everything that could leave the two sides
// apart (a restarted plugin, a lost or reordered call, a plugin that forgot
// a generation) ends in the plugin answering ActiveSetUnknown and the host
// sending the whole set: the failure mode is a slower call, never a wrong
// set.

// activeSender builds the requests of one GRPCClient. The zero value sends
// the whole set without active_set on every call, which is what a plugin
// that has not declared keeps_active_sets gets.
type activeSender struct {
	mu      sync.Mutex
	keeps   bool   // the plugin declared keeps_active_sets
	session string // chosen when the plugin first declares it
	last    uint64 // the last generation numbered
	// acked is the newest set the plugin answered a call with; changes
	// are computed against it.
	acked *sentSet
}

// sentSet is one generation of the active set as sent: each pod's encoding
// (raws) and its index there by UID (at). It is never changed once made,
// so calls share it unlocked.
type sentSet struct {
	gen  uint64
	at   map[types.UID]int
	raws [][]byte
	// from is the Prepared.active the set was made from; a Prepared
	// sharing it (Encoder reuses an unchanged set's) holds the set.
	from []preparedPod
}

// encoding returns the encoding the set holds for uid.
func (s *sentSet) encoding(uid types.UID) ([]byte, bool) {
	i, ok := s.at[uid]
	if !ok {
		return nil, false
	}
	return s.raws[i], true
}

// holds reports whether p's active pods are exactly the set's, the common
// case (an active set changes rarely), without building the map a change
// needs: every pod of p matches a distinct pod of the set, as many as the
// set has.
func (s *sentSet) holds(p *Prepared) bool {
	if len(p.active) != len(s.raws) {
		return false
	}
	if len(p.active) > 0 && len(s.from) == len(p.active) && &s.from[0] == &p.active[0] {
		return true
	}
	seen := make([]bool, len(s.raws))
	for _, a := range p.active {
		i, ok := s.at[a.uid]
		if !ok || seen[i] || !sameBytes(s.raws[i], a.raw) {
			return false
		}
		seen[i] = true
	}
	return true
}

// setKeeps records whether the plugin keeps active sets (its Describe).
func (s *activeSender) setKeeps(keeps bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keeps = keeps
	if keeps && s.session == "" {
		s.session = rand.Text()
	}
}

func (s *activeSender) keepsSets() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keeps
}

// request is p's wire form for this plugin: the whole set when the plugin
// keeps none, when whole is set or nothing was acknowledged yet, and
// otherwise the changes since the acknowledged set. sent is to be passed to
// acknowledge once the plugin has answered; nil when the plugin keeps
// nothing of this call.
func (s *activeSender) request(p *Prepared, whole bool) (in *pluginv1.AdmitRequest, sent *sentSet) {
	s.mu.Lock()
	keeps, session, base := s.keeps, s.session, s.acked
	s.mu.Unlock()
	if !keeps {
		return p.wholeSet(), nil
	}
	if base != nil && !whole && base.holds(p) {
		return &pluginv1.AdmitRequest{Pod: p.pod, Node: p.node,
			ActiveSet: &pluginv1.ActiveSet{Session: session, Generation: base.gen, BaseGeneration: base.gen}}, base
	}
	cur := &sentSet{at: make(map[types.UID]int, len(p.active)), raws: make([][]byte, len(p.active)), from: p.active}
	for i, a := range p.active {
		if _, dup := cur.at[a.uid]; dup || a.uid == "" {
			// Changes are matched by UID, so a set that names a pod
			// twice or not at all can only go whole, and is not kept.
			return p.wholeSet(), nil
		}
		cur.at[a.uid] = i
		cur.raws[i] = a.raw
	}

	in = &pluginv1.AdmitRequest{Pod: p.pod, Node: p.node}
	set := &pluginv1.ActiveSet{Session: session}
	in.ActiveSet = set
	if whole || base == nil {
		cur.gen = s.nextGeneration()
		set.Generation = cur.gen
		in.ActivePods = cur.raws
		return in, cur
	}
	set.BaseGeneration = base.gen
	for _, a := range p.active {
		if old, ok := base.encoding(a.uid); !ok || !sameBytes(old, a.raw) {
			set.ChangedPods = append(set.ChangedPods, a.raw)
		}
	}
	for uid := range base.at {
		if _, ok := cur.at[uid]; !ok {
			set.RemovedUids = append(set.RemovedUids, string(uid))
		}
	}
	slices.Sort(set.RemovedUids)
	cur.gen = s.nextGeneration()
	set.Generation = cur.gen
	return in, cur
}

func (s *activeSender) nextGeneration() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last++
	return s.last
}

// acknowledge records that the plugin holds sent. Calls may answer out of
// order; the newest generation wins.
func (s *activeSender) acknowledge(sent *sentSet) {
	if sent == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acked == nil || sent.gen > s.acked.gen {
		s.acked = sent
	}
}

// forget drops the acknowledged set when it is gen, which the plugin said
// it does not hold.
func (s *activeSender) forget(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acked != nil && s.acked.gen == gen {
		s.acked = nil
	}
}

// sameBytes is bytes.Equal that first compares the slices themselves: an
// unchanged pod's encoding is usually the very slice sent before (the
// Encoder's cache, or the host's store of decoded pods).
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return string(a) == string(b)
}

// activeSetUnknown is what a plugin answers to changes against a base it
// does not hold.
func activeSetUnknown(set *pluginv1.ActiveSet) error {
	st := status.New(codes.FailedPrecondition,
		"the plugin does not hold the base generation of the active pods; send the whole set")
	// WithDetails fails only for codes.OK.
	withDetail, err := st.WithDetails(&pluginv1.ActiveSetUnknown{Session: set.GetSession(), BaseGeneration: set.GetBaseGeneration()})
	if err != nil {
		return st.Err()
	}
	return withDetail.Err()
}

// isActiveSetUnknown reports whether err is a plugin's ActiveSetUnknown
// answer.
func isActiveSetUnknown(err error) bool {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.FailedPrecondition {
		return false
	}
	for _, d := range st.Details() {
		if _, ok := d.(*pluginv1.ActiveSetUnknown); ok {
			return true
		}
	}
	return false
}
