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
// no copies), then those in refs (named refsField in errors), in order.
//
// References are resolved before any pod of the request is decoded, so the
// store's new entries cannot push out a pod the request names. A reference
// the store does not hold fails the whole request with
// *unknownActivePodsError (FailedPrecondition, naming every such UID); a
// reference whose bytes do not match its uid or digest is InvalidArgument.
func (s *Service) decodeActive(full [][]byte, refs []*admissionv1.ActivePod, refsField string) ([]*v1.Pod, error) {
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
		if len(a.GetPod()) == 0 {
			byRef = append(byRef, podcache.Ref{UID: a.GetUid(), Digest: [sha256.Size]byte(a.GetDigest())})
			byRefAt = append(byRefAt, i)
		}
	}
	pods := make([]*v1.Pod, len(refs))
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

	active := make([]*v1.Pod, 0, len(full)+len(pods))
	for i, b := range full {
		pod, err := s.decodePod(b)
		if err != nil {
			return nil, podError(fmt.Sprintf("active_pods[%d]", i), err)
		}
		active = append(active, pod)
	}
	return append(active, pods...), nil
}
