package admission

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
)

// activeSet is the client's half of sending the active pods by reference:
// per pod UID, the encoding and SHA-256 digest of the pod object last seen
// under that UID, and whether the server holds those bytes. An unchanged
// pod is never encoded again (the config mux hands sync a new *v1.Pod
// whenever a pod changes, so the pointer says whether it did), and bytes the
// server holds are named by (uid, digest) alone, which makes a call's
// request O(active pods) small references instead of O(active pods) full
// pods encoded, sent and hashed again. And since the set itself rarely
// changes, a set the server answered for is named next time by its digest
// alone (AdmitRequest.active_set): a request of one pod and 32 bytes. A set
// that did change (a burst of pod starts adds a batch's pods to it each
// call) goes as the change to the set the server holds
// (AdmitRequest.active_change): O(changed pods), not O(active pods).
//
// It is safe for concurrent use; concurrent calls at worst send a pod in
// full twice.
type activeSet struct {
	// marshal encodes a pod; tests count its calls.
	marshal func(*v1.Pod) ([]byte, error)

	mu    sync.Mutex
	byUID map[types.UID]*encodedPod
	// call numbers prepare's calls, to forget pods a call did not name.
	call uint64
	// heldSet is the digest of the last active set the server answered a
	// call for (it keeps the set under that digest); zero when none.
	heldSet [sha256.Size]byte
	// heldPods are that set's pods, in order, and heldMark marks them:
	// a pod is in it when its entry's inHeldSet equals heldMark.
	heldPods []*encodedPod
	heldMark uint64
}

// encodedPod is one pod object's encoding.
type encodedPod struct {
	pod    *v1.Pod
	raw    []byte
	digest [sha256.Size]byte
	// held: a call that sent or named these bytes succeeded, so the
	// server has them (until it restarts: then it says so, see
	// unknownActivePods).
	held bool
	// used is the last call that named the pod.
	used uint64
	// inSet is the last call that named the pod as active, inHeldSet the
	// activeSet.heldMark of the last held set it was in, and heldAt its
	// index in that set.
	inSet, inHeldSet uint64
	heldAt           int
}

func newActiveSet() *activeSet {
	return &activeSet{marshal: (*v1.Pod).Marshal, byUID: map[types.UID]*encodedPod{}}
}

// prepared is one request's pods: the encodings of the pods to admit, the
// references of the active pods or the change to the held set (neither
// when set alone names it), the digest of the active set, and every entry
// the request carries, to acknowledge once the server answered: the pods
// to admit, then the active set's in order.
type prepared struct {
	pods    [][]byte
	active  []*admissionv1.ActivePod
	change  *admissionv1.ActiveSetChange
	set     [sha256.Size]byte
	entries []*encodedPod
}

// resend is what a server said it lacks, for the next try of a request:
// the active set its digest named, or the pods of the UIDs in pods.
type resend struct {
	set  bool
	pods map[types.UID]bool
}

// prepare encodes a request: pods in full, and the active set by its
// digest alone when the server holds it (the common call: sync's active
// set changes rarely), as the change to the set the server holds when
// that is smaller than the set, or else by reference; a pod goes in full
// where the server is not known to hold it or again names its UID. Pods
// neither in pods nor in active are forgotten: they are no longer active,
// and a pod that comes back is encoded afresh.
func (s *activeSet) prepare(pods, active []*v1.Pod, again resend) (prepared, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.call++
	out := prepared{
		pods:    make([][]byte, 0, len(pods)),
		entries: make([]*encodedPod, 0, len(pods)+len(active)),
	}
	for _, p := range pods {
		e, err := s.encodeLocked(p)
		if err != nil {
			return prepared{}, fmt.Errorf("encode pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		out.pods = append(out.pods, e.raw)
		out.entries = append(out.entries, e)
	}
	setHash := sha256.New()
	for _, p := range active {
		e, err := s.encodeLocked(p)
		if err != nil {
			return prepared{}, fmt.Errorf("encode active pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if again.pods[p.UID] {
			e.held = false
		}
		e.inSet = s.call
		setHash.Write(e.digest[:])
		out.entries = append(out.entries, e)
	}
	out.set = [sha256.Size]byte(setHash.Sum(nil))
	set := out.entries[len(pods):]
	switch {
	case !again.set && again.pods == nil && out.set == s.heldSet:
		// The digest alone names it.
	case !again.set && again.pods == nil && s.heldSet != [sha256.Size]byte{}:
		out.change = s.changeLocked(set)
		if out.change != nil {
			break
		}
		fallthrough
	default:
		out.active = make([]*admissionv1.ActivePod, len(set))
		for i, e := range set {
			out.active[i] = e.ref()
		}
	}
	// A sweep only when some entry was not named: the common call, with
	// the same active set as the last, costs nothing more.
	if len(s.byUID) > len(out.entries) {
		for uid, e := range s.byUID {
			if e.used != s.call {
				delete(s.byUID, uid)
			}
		}
	}
	return out, nil
}

// changeLocked returns set as the change to the held set, or nil when a
// change cannot say it (the held pods kept are in another order) or would
// name more pods than set has: the references are then the smaller
// request.
func (s *activeSet) changeLocked(set []*encodedPod) *admissionv1.ActiveSetChange {
	change := &admissionv1.ActiveSetChange{Base: bytes.Clone(s.heldSet[:])}
	last := -1
	for i, e := range set {
		if e.inHeldSet != s.heldMark {
			change.Added = append(change.Added, e.ref())
			change.AddedAt = append(change.AddedAt, uint32(i))
			continue
		}
		if e.heldAt < last {
			return nil
		}
		last = e.heldAt
	}
	for _, e := range s.heldPods {
		if e.inSet != s.call {
			change.Removed = append(change.Removed, string(e.pod.UID))
		}
	}
	if len(change.Added)+len(change.Removed) >= len(set) {
		return nil
	}
	return change
}

// ref is the pod's reference, carrying its encoding unless the server is
// known to hold it.
func (e *encodedPod) ref() *admissionv1.ActivePod {
	ref := &admissionv1.ActivePod{Uid: string(e.pod.UID), Digest: e.digest[:]}
	if !e.held {
		ref.Pod = e.raw
	}
	return ref
}

// encodeLocked returns pod's encoding, made only when pod is not the
// object encoded last under its UID. A new object with the same bytes
// keeps its entry, and with it what the server holds.
func (s *activeSet) encodeLocked(pod *v1.Pod) (*encodedPod, error) {
	e := s.byUID[pod.UID]
	if e == nil || e.pod != pod {
		raw, err := s.marshal(pod)
		if err != nil {
			return nil, err
		}
		digest := sha256.Sum256(raw)
		if e != nil && e.digest == digest {
			// The same bytes: the same entry, still held, still in
			// the held set.
			e.pod = pod
		} else {
			e = &encodedPod{pod: pod, raw: raw, digest: digest}
			s.byUID[pod.UID] = e
		}
	}
	e.used = s.call
	return e, nil
}

// acknowledge records that the server answered a request carrying
// entries: it holds every one of them now (the pods to admit too: the
// server keeps every pod it decodes), and the active set under its digest
// when the answer says so (setHeld: a server that keeps no sets never
// does).
func (s *activeSet) acknowledge(p prepared, setHeld bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range p.entries {
		e.held = true
	}
	if !setHeld {
		s.heldSet, s.heldPods = [sha256.Size]byte{}, nil
		return
	}
	if s.heldSet == p.set {
		return
	}
	s.heldSet, s.heldPods = p.set, p.entries[len(p.pods):]
	s.heldMark++
	for i, e := range s.heldPods {
		e.inHeldSet, e.heldAt = s.heldMark, i
	}
}

// retry returns what to send again after err, which answered a request
// prepared with again: the pods an UnknownActivePods detail names, or the
// active set's references after an UnknownActiveSet detail; false when
// err is no such answer or the request already resent what it names.
func retry(err error, again resend) (resend, bool) {
	if missing := unknownActivePods(err); missing != nil && again.pods == nil {
		return resend{set: true, pods: missing}, true
	}
	if unknownActiveSet(err) && !again.set {
		return resend{set: true}, true
	}
	return again, false
}

// unknownActiveSet says whether err is FailedPrecondition with an
// UnknownActiveSet detail: the server does not hold the active set the
// request named by digest alone.
func unknownActiveSet(err error) bool {
	_, ok := preconditionDetail[*admissionv1.UnknownActiveSet](err)
	return ok
}

// unknownActivePods returns the UIDs a FailedPrecondition error's
// UnknownActivePods detail names: active pods referred to that the server
// does not hold (it restarted). It returns nil for any other error.
func unknownActivePods(err error) map[types.UID]bool {
	u, ok := preconditionDetail[*admissionv1.UnknownActivePods](err)
	if !ok || len(u.GetUids()) == 0 {
		return nil
	}
	uids := make(map[types.UID]bool, len(u.GetUids()))
	for _, uid := range u.GetUids() {
		uids[types.UID(uid)] = true
	}
	return uids
}

// preconditionDetail returns err's detail of type T when err is
// FailedPrecondition with one.
func preconditionDetail[T any](err error) (T, bool) {
	var none T
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeFailedPrecondition {
		return none, false
	}
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil {
			if u, ok := v.(T); ok {
				return u, true
			}
		}
	}
	return none, false
}
