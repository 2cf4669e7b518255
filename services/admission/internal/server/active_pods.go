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
func (s *Service) decodeActive(full [][]byte, refs []*admissionv1.ActivePod, set []byte, refsField string) (active []*v1.Pod, setHeld bool, err error) {
	setField := refsField + "_set"
	if len(set) != 0 && len(set) != sha256.Size {
		return nil, false, fmt.Errorf("%s: %d bytes, want the %d of a SHA-256 digest: %w", setField, len(set), sha256.Size, errdefs.ErrInvalidArgument)
	}
	var pods []*v1.Pod
	if len(set) != 0 && len(refs) == 0 {
		held, ok := s.pods.Set([sha256.Size]byte(set))
		if !ok {
			return nil, false, &unknownActiveSetError{digest: set}
		}
		pods, setHeld = held, true
	} else if pods, setHeld, err = s.resolveActive(refs, set, refsField, setField); err != nil {
		return nil, false, err
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
	byRef := make([]podcache.Ref, 0, len(refs))
	byRefAt := make([]int, 0, len(refs))
	for i, a := range refs {
		if a.GetUid() == "" {
			return nil, false, fmt.Errorf("%s[%d].uid: empty: %w", refsField, i, errdefs.ErrInvalidArgument)
		}
		if len(a.GetDigest()) != sha256.Size {
			return nil, false, fmt.Errorf("%s[%d].digest: %d bytes, want the %d of a SHA-256 digest: %w",
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
			return nil, false, &unknownActivePodsError{uids: uids}
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
			return nil, false, podError(fmt.Sprintf("%s[%d].pod", refsField, i), err)
		}
		if ref.UID != a.GetUid() {
			return nil, false, fmt.Errorf("%s[%d].uid: %q, but the pod's is %q: %w", refsField, i, a.GetUid(), ref.UID, errdefs.ErrInvalidArgument)
		}
		// A client's digest that is not the one of the bytes it sent would
		// later name a pod it never sent: refuse it now.
		if !bytes.Equal(ref.Digest[:], a.GetDigest()) {
			return nil, false, fmt.Errorf("%s[%d].digest: not the SHA-256 of the pod's bytes: %w", refsField, i, errdefs.ErrInvalidArgument)
		}
		pods[i] = pod
	}
	if len(set) == 0 {
		return pods, false, nil
	}
	digest := [sha256.Size]byte(set)
	if podcache.SetDigest(all) != digest {
		return nil, false, fmt.Errorf("%s: not the SHA-256 of %s's digests in order: %w", setField, refsField, errdefs.ErrInvalidArgument)
	}
	return pods, s.pods.PutSet(digest, all, pods), nil
}
