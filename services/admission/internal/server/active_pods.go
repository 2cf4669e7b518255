package server

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/services/admission/internal/podcache"
)

// decodeActive returns the active pods of a request: those sent in full
// in the old way (full, the AdmitRequest.active_pods of clients that keep
// no copies), then those in refs (named refsField in errors), in order; or,
// when refs is empty and set (named refsField+"_set") is a digest, the set
// held under it.
//
// References are resolved before any pod of the request is decoded, so the
// store's new entries cannot push out a pod the request names. A reference
// the store does not hold fails the whole request with
// *unknownActivePodsError (FailedPrecondition, naming every such UID); a
// reference whose bytes do not match its uid or digest is InvalidArgument.
// A set digest beside refs must be theirs, and the set is then kept under
// it; a set digest alone that is not held fails with *unknownActiveSetError
// (FailedPrecondition). setHeld says the set is held under its digest now.
// A change (named refsField+"_change") instead of refs names the set as a
// change to a held one (applyChange).
func (s *Service) decodeActive(full [][]byte, refs []*admissionv1.ActivePod, set []byte, change *admissionv1.ActiveSetChange, refsField string) (active []*v1.Pod, setHeld bool, err error) {
	setField := refsField + "_set"
	if len(set) != 0 && len(set) != sha256.Size {
		return nil, false, fmt.Errorf("%s: %d bytes, want the %d of a SHA-256 digest: %w", setField, len(set), sha256.Size, errdefs.ErrInvalidArgument)
	}
	var pods []*v1.Pod
	switch {
	case change != nil:
		if pods, setHeld, err = s.applyChange(change, refs, set, refsField, setField); err != nil {
			return nil, false, err
		}
	case len(set) != 0 && len(refs) == 0:
		held, _, ok := s.pods.Set([sha256.Size]byte(set))
		if !ok {
			return nil, false, &unknownActiveSetError{digest: set}
		}
		pods, setHeld = held, true
	default:
		if pods, setHeld, err = s.resolveActive(refs, set, refsField, setField); err != nil {
			return nil, false, err
		}
	}
	if len(full) == 0 {
		return pods, setHeld, nil
	}
	active = make([]*v1.Pod, 0, len(full)+len(pods))
	for i, b := range full {
		pod, err := s.decodePod(b)
		if err != nil {
			return nil, false, podError(fmt.Sprintf("active_pods[%d]", i), err)
		}
		active = append(active, pod)
	}
	return append(active, pods...), setHeld, nil
}

// resolveActive returns the pods refs name or carry, in order, and keeps
// them as the set named set when it is a digest (theirs, or the request
// is refused); setHeld says it was kept.
func (s *Service) resolveActive(refs []*admissionv1.ActivePod, set []byte, refsField, setField string) (pods []*v1.Pod, setHeld bool, err error) {
	// all are the references in order, for the set's digest: made only
	// when the request names a set.
	var all []podcache.Ref
	if len(set) != 0 {
		all = make([]podcache.Ref, len(refs))
	}
	if pods, err = s.resolveRefs(refs, all, refsField); err != nil {
		return nil, false, err
	}
	if len(set) == 0 {
		return pods, false, nil
	}
	return s.keepSet(set, all, pods, refsField, setField)
}

// keepSet checks that set is the digest of refs (the request's, named
// refsField) and keeps pods under it.
func (s *Service) keepSet(set []byte, refs []podcache.Ref, pods []*v1.Pod, refsField, setField string) ([]*v1.Pod, bool, error) {
	digest := [sha256.Size]byte(set)
	if podcache.SetDigest(refs) != digest {
		return nil, false, fmt.Errorf("%s: not the SHA-256 of %s's digests in order: %w", setField, refsField, errdefs.ErrInvalidArgument)
	}
	return pods, s.pods.PutSet(digest, refs, pods), nil
}

// resolveRefs returns the pods refs name or carry, in order, and fills
// all (when not nil, of refs' length) with their references.
func (s *Service) resolveRefs(refs []*admissionv1.ActivePod, all []podcache.Ref, refsField string) (pods []*v1.Pod, err error) {
	byRef := make([]podcache.Ref, 0, len(refs))
	byRefAt := make([]int, 0, len(refs))
	for i, a := range refs {
		if a.GetUid() == "" {
			return nil, fmt.Errorf("%s[%d].uid: empty: %w", refsField, i, errdefs.ErrInvalidArgument)
		}
		if len(a.GetDigest()) != sha256.Size {
			return nil, fmt.Errorf("%s[%d].digest: %d bytes, want the %d of a SHA-256 digest: %w",
				refsField, i, len(a.GetDigest()), sha256.Size, errdefs.ErrInvalidArgument)
		}
		ref := podcache.Ref{UID: a.GetUid(), Digest: [sha256.Size]byte(a.GetDigest())}
		if all != nil {
			all[i] = ref
		}
		if len(a.GetPod()) == 0 {
			byRef = append(byRef, ref)
			byRefAt = append(byRefAt, i)
		}
	}
	pods = make([]*v1.Pod, len(refs))
	if len(byRef) > 0 {
		held, missing := s.pods.Resolve(byRef)
		if len(missing) > 0 {
			uids := make([]string, len(missing))
			for j, m := range missing {
				uids[j] = byRef[m].UID
			}
			return nil, &unknownActivePodsError{uids: uids}
		}
		for j, p := range held {
			pods[byRefAt[j]] = p
		}
	}
	for i, a := range refs {
		if len(a.GetPod()) == 0 {
			continue
		}
		pod, ref, err := s.pods.DecodeRef(a.GetPod())
		if err != nil {
			return nil, podError(fmt.Sprintf("%s[%d].pod", refsField, i), err)
		}
		if ref.UID != a.GetUid() {
			return nil, fmt.Errorf("%s[%d].uid: %q, but the pod's is %q: %w", refsField, i, a.GetUid(), ref.UID, errdefs.ErrInvalidArgument)
		}
		// A client's digest that is not the one of the bytes it sent would
		// later name a pod it never sent: refuse it now.
		if !bytes.Equal(ref.Digest[:], a.GetDigest()) {
			return nil, fmt.Errorf("%s[%d].digest: not the SHA-256 of the pod's bytes: %w", refsField, i, errdefs.ErrInvalidArgument)
		}
		pods[i] = pod
	}
	return pods, nil
}

// applyChange returns the active set change names: the held set
// change.base less the pods change.removed names, with change.added (named
// refsField+"_change.added") resolved or decoded and inserted at their
// change.added_at indexes. refs must be empty and set must be the new
// set's digest, under which the set is kept. A base not held is
// *unknownActiveSetError naming it, as a set named alone.
func (s *Service) applyChange(change *admissionv1.ActiveSetChange, refs []*admissionv1.ActivePod, set []byte, refsField, setField string) ([]*v1.Pod, bool, error) {
	changeField := refsField + "_change"
	if len(refs) != 0 {
		return nil, false, fmt.Errorf("%s: %d pods beside %s; want one or the other: %w", refsField, len(refs), changeField, errdefs.ErrInvalidArgument)
	}
	if len(set) == 0 {
		return nil, false, fmt.Errorf("%s: empty; required with %s: %w", setField, changeField, errdefs.ErrInvalidArgument)
	}
	base := change.GetBase()
	if len(base) != sha256.Size {
		return nil, false, fmt.Errorf("%s.base: %d bytes, want the %d of a SHA-256 digest: %w", changeField, len(base), sha256.Size, errdefs.ErrInvalidArgument)
	}
	added, at := change.GetAdded(), change.GetAddedAt()
	if len(at) != len(added) {
		return nil, false, fmt.Errorf("%s.added_at: %d indexes for %d added pods: %w", changeField, len(at), len(added), errdefs.ErrInvalidArgument)
	}
	basePods, baseRefs, ok := s.pods.Set([sha256.Size]byte(base))
	if !ok {
		return nil, false, &unknownActiveSetError{digest: base}
	}
	// The request names the whole set, not only what it carries: room
	// for all of it, as a request of references reserves.
	s.pods.Reserve(len(basePods) + len(added))
	removed := make(map[string]bool, len(change.GetRemoved()))
	for i, uid := range change.GetRemoved() {
		if removed[uid] {
			return nil, false, fmt.Errorf("%s.removed[%d]: %q named twice: %w", changeField, i, uid, errdefs.ErrInvalidArgument)
		}
		removed[uid] = true
	}
	kept := 0
	for _, r := range baseRefs {
		if !removed[r.UID] {
			kept++
		}
	}
	if gone := len(baseRefs) - kept; gone != len(removed) {
		return nil, false, fmt.Errorf("%s.removed: %d UIDs, of which %d are in the base set: %w", changeField, len(removed), gone, errdefs.ErrInvalidArgument)
	}
	n := kept + len(added)
	for j, k := range at {
		if int(k) >= n || (j > 0 && k <= at[j-1]) {
			return nil, false, fmt.Errorf("%s.added_at[%d]: %d, want indexes strictly ascending and below the new set's %d pods: %w",
				changeField, j, k, n, errdefs.ErrInvalidArgument)
		}
	}
	addedRefs := make([]podcache.Ref, len(added))
	addedPods, err := s.resolveRefs(added, addedRefs, changeField+".added")
	if err != nil {
		return nil, false, err
	}
	pods := make([]*v1.Pod, 0, n)
	all := make([]podcache.Ref, 0, n)
	b, j := 0, 0
	for len(pods) < n {
		if j < len(at) && int(at[j]) == len(pods) {
			pods, all = append(pods, addedPods[j]), append(all, addedRefs[j])
			j++
			continue
		}
		for removed[baseRefs[b].UID] {
			b++
		}
		pods, all = append(pods, basePods[b]), append(all, baseRefs[b])
		b++
	}
	return s.keepSet(set, all, pods, changeField, setField)
}
