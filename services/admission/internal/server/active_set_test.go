package server

import (
	"context"
	"crypto/sha256"
	"strings"
	"testing"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
)

// setDigest is AdmitRequest.active_set of refs: SHA-256 of their digests
// in order, written out here rather than through podcache.SetDigest so
// that the test checks the proto's definition.
func setDigest(refs []*admissionv1.ActivePod) []byte {
	var all []byte
	for _, r := range refs {
		all = append(all, r.Digest...)
	}
	d := sha256.Sum256(all)
	return d[:]
}

// unknownSet returns the digest of err's UnknownActiveSet detail.
func unknownSet(t *testing.T, err error) []byte {
	t.Helper()
	return preconditionDetail[*admissionv1.UnknownActiveSet](t, err).GetDigest()
}

// TestActiveSetByDigest walks the set protocol across a server restart:
// a set sent by reference with its digest is then named by the digest
// alone, for Admit and AdmitPods; a digest the server never kept, or kept
// before it restarted, is FailedPrecondition with an UnknownActiveSet
// detail; the digest of no pods is the empty set on any server.
func TestActiveSetByDigest(t *testing.T) {
	tp := testfixture.Pod
	active := []*v1.Pod{tp("a", "100m", "300Mi"), tp("b", "100m", "300Mi"), tp("c", "100m", "300Mi")}
	// 900Mi active leaves no room for 200Mi: a decision that needs all
	// three pods of the set.
	newPod := marshal(t, tp("new", "100m", "200Mi"))[0]
	full, byRef := refs(t, true, active...), refs(t, false, active...)
	digest := setDigest(full)
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			httpClient, url := startServer(t, newTestService(t, nil))
			client := admissionv1connect.NewAdmissionServiceClient(httpClient, url, p.opts...)
			admit := func(client admissionv1connect.AdmissionServiceClient, act []*admissionv1.ActivePod, set []byte) (*admissionv1.AdmitResponse, error) {
				resp, err := client.Admit(context.Background(), connect.NewRequest(&admissionv1.AdmitRequest{Pod: newPod, Active: act, ActiveSet: set}))
				if err != nil {
					return nil, err
				}
				return resp.Msg, nil
			}

			// Never sent: unknown, and the detail names the digest.
			_, err := admit(client, nil, digest)
			if got := unknownSet(t, err); string(got) != string(digest) {
				t.Fatalf("unknown set %x, want %x", got, digest)
			}
			for _, round := range []struct {
				desc string
				act  []*admissionv1.ActivePod
			}{
				{desc: "in full with the digest", act: full},
				{desc: "by the digest alone"},
			} {
				got, err := admit(client, round.act, digest)
				if err != nil {
					t.Fatalf("%s: %v", round.desc, err)
				}
				if got.Admit || got.Reason != "OutOfmemory" {
					t.Fatalf("%s: admit %v reason %q, want OutOfmemory (the three pods counted)", round.desc, got.Admit, got.Reason)
				}
				if !got.ActiveSetHeld {
					t.Errorf("%s: the answer does not say the set is held", round.desc)
				}
			}
			resp, err := client.AdmitPods(context.Background(), connect.NewRequest(&admissionv1.AdmitPodsRequest{Pods: [][]byte{newPod}, ActiveSet: digest}))
			if err != nil || len(resp.Msg.Results) != 1 || resp.Msg.Results[0].Reason != "OutOfmemory" || !resp.Msg.ActiveSetHeld {
				t.Fatalf("AdmitPods by the digest alone: %v %v, want one OutOfmemory and the set held", resp, err)
			}
			// Without a digest nothing is said to be held.
			if got, err := admit(client, byRef, nil); err != nil || got.ActiveSetHeld {
				t.Fatalf("references without a digest: %v %v, want an answer not saying the set is held", got, err)
			}
			// The empty set needs nothing sent before, and counts nothing.
			if got, err := admit(client, nil, setDigest(nil)); err != nil || !got.Admit {
				t.Fatalf("the empty set: %v %v, want admitted", got, err)
			}

			// A restart: the new server holds neither the set nor its pods.
			httpClient2, url2 := startServer(t, newTestService(t, nil))
			restarted := admissionv1connect.NewAdmissionServiceClient(httpClient2, url2, p.opts...)
			if _, err := admit(restarted, nil, digest); unknownSet(t, err) == nil {
				t.Fatal("the restarted server knows the set")
			}
			if _, err := admit(restarted, byRef, digest); len(unknownUIDs(t, err)) != 3 {
				t.Fatalf("references to pods the restarted server never had: %v, want all three unknown", err)
			}
			if got, err := admit(restarted, full, digest); err != nil || got.Reason != "OutOfmemory" {
				t.Fatalf("after resending: %v %v, want OutOfmemory", got, err)
			}
			if got, err := admit(restarted, nil, digest); err != nil || got.Reason != "OutOfmemory" {
				t.Fatalf("by the digest after resending: %v %v, want OutOfmemory", got, err)
			}
		})
	}
}

// TestActiveSetInvalid: a set digest that is not a digest, or not the one
// of the references beside it, is refused naming active_set, and the set
// is not kept.
func TestActiveSetInvalid(t *testing.T) {
	tp := testfixture.Pod
	httpClient, url := startServer(t, newTestService(t, nil))
	client := admissionv1connect.NewAdmissionServiceClient(httpClient, url)
	newPod := marshal(t, tp("new", "100m", "200Mi"))[0]
	act := refs(t, true, tp("a", "100m", "300Mi"), tp("b", "100m", "300Mi"))
	wrong := setDigest(act[:1])
	for _, tc := range []struct {
		desc string
		req  *admissionv1.AdmitRequest
		want string
	}{
		{desc: "short", req: &admissionv1.AdmitRequest{Pod: newPod, Active: act, ActiveSet: wrong[:8]}, want: "active_set: 8 bytes"},
		{desc: "another set's", req: &admissionv1.AdmitRequest{Pod: newPod, Active: act, ActiveSet: wrong}, want: "active_set: not the SHA-256 of active's digests"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := client.Admit(context.Background(), connect.NewRequest(tc.req))
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want InvalidArgument naming %q", err, tc.want)
			}
		})
	}
	_, err := client.Admit(context.Background(), connect.NewRequest(&admissionv1.AdmitRequest{Pod: newPod, ActiveSet: wrong}))
	if unknownSet(t, err) == nil {
		t.Fatal("a refused set was kept")
	}
}

// TestActiveSetChange: a set named as a change to a held set is the set
// the full list of references names (same decisions, kept under the same
// digest); a change to a base the server does not hold is
// FailedPrecondition naming the base; a malformed change is refused
// naming its field, and no set is kept for it.
func TestActiveSetChange(t *testing.T) {
	tp := testfixture.Pod
	a, b, c, d := tp("a", "100m", "300Mi"), tp("b", "100m", "300Mi"), tp("c", "100m", "300Mi"), tp("d", "100m", "300Mi")
	newPod := marshal(t, tp("new", "100m", "200Mi"))[0]
	base := setDigest(refs(t, false, a, b, c))
	httpClient, url := startServer(t, newTestService(t, nil))
	client := admissionv1connect.NewAdmissionServiceClient(httpClient, url, connect.WithGRPC())
	admitPods := func(req *admissionv1.AdmitPodsRequest) (*admissionv1.AdmitPodsResponse, error) {
		req.Pods = [][]byte{newPod}
		resp, err := client.AdmitPods(context.Background(), connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return resp.Msg, nil
	}

	// Unknown before the base is sent.
	change := &admissionv1.ActiveSetChange{Base: base, Removed: []string{"uid-b"}}
	if _, err := admitPods(&admissionv1.AdmitPodsRequest{ActiveChange: change, ActiveSet: setDigest(refs(t, false, a, c))}); string(unknownSet(t, err)) != string(base) {
		t.Fatalf("a change to a base never sent: %v, want UnknownActiveSet naming the base", err)
	}
	if resp, err := admitPods(&admissionv1.AdmitPodsRequest{Active: refs(t, true, a, b, c), ActiveSet: base}); err != nil || !resp.ActiveSetHeld {
		t.Fatalf("sending the base: %v %v", resp, err)
	}

	for _, step := range []struct {
		desc   string
		change *admissionv1.ActiveSetChange
		// set is the new set in order; reason the answer for newPod.
		set    []*v1.Pod
		reason string
	}{
		{desc: "b removed", change: &admissionv1.ActiveSetChange{Base: base, Removed: []string{"uid-b"}}, set: []*v1.Pod{a, c}},
		{desc: "d added first, sent in full", change: &admissionv1.ActiveSetChange{Base: setDigest(refs(t, false, a, c)),
			Added: refs(t, true, d), AddedAt: []uint32{0}}, set: []*v1.Pod{d, a, c}, reason: "OutOfmemory"},
		{desc: "b back by reference between d and a, c removed", change: &admissionv1.ActiveSetChange{Base: setDigest(refs(t, false, d, a, c)),
			Removed: []string{"uid-c"}, Added: refs(t, false, b), AddedAt: []uint32{1}}, set: []*v1.Pod{d, b, a}, reason: "OutOfmemory"},
		{desc: "everything replaced", change: &admissionv1.ActiveSetChange{Base: setDigest(refs(t, false, d, b, a)),
			Removed: []string{"uid-a", "uid-b", "uid-d"}, Added: refs(t, false, c), AddedAt: []uint32{0}}, set: []*v1.Pod{c}},
	} {
		digest := setDigest(refs(t, false, step.set...))
		resp, err := admitPods(&admissionv1.AdmitPodsRequest{ActiveChange: step.change, ActiveSet: digest})
		if err != nil {
			t.Fatalf("%s: %v", step.desc, err)
		}
		if got := resp.Results[0]; got.Reason != step.reason || got.Admit != (step.reason == "") || !resp.ActiveSetHeld {
			t.Fatalf("%s: admit %v reason %q held %v, want reason %q and the set held", step.desc, got.Admit, got.Reason, resp.ActiveSetHeld, step.reason)
		}
		// The changed set is held under the digest of its full list.
		if resp, err := admitPods(&admissionv1.AdmitPodsRequest{ActiveSet: digest}); err != nil || resp.Results[0].Reason != step.reason {
			t.Fatalf("%s: the changed set by its digest alone: %v %v", step.desc, resp, err)
		}
	}

	held := setDigest(refs(t, false, c))
	for _, tc := range []struct {
		desc string
		req  *admissionv1.AdmitPodsRequest
		want string
	}{
		{desc: "without the new digest", req: &admissionv1.AdmitPodsRequest{ActiveChange: &admissionv1.ActiveSetChange{Base: held}},
			want: "active_set: empty; required with active_change"},
		{desc: "beside references", req: &admissionv1.AdmitPodsRequest{Active: refs(t, false, c), ActiveSet: held,
			ActiveChange: &admissionv1.ActiveSetChange{Base: held}}, want: "active: 1 pods beside active_change"},
		{desc: "short base", req: &admissionv1.AdmitPodsRequest{ActiveSet: held, ActiveChange: &admissionv1.ActiveSetChange{Base: held[:4]}},
			want: "active_change.base: 4 bytes"},
		{desc: "removing a pod not in the base", req: &admissionv1.AdmitPodsRequest{ActiveSet: setDigest(nil),
			ActiveChange: &admissionv1.ActiveSetChange{Base: held, Removed: []string{"uid-a"}}}, want: "active_change.removed: 1 UIDs, of which 0"},
		{desc: "an index per added pod", req: &admissionv1.AdmitPodsRequest{ActiveSet: held,
			ActiveChange: &admissionv1.ActiveSetChange{Base: held, Added: refs(t, false, a)}}, want: "active_change.added_at: 0 indexes for 1"},
		{desc: "an index past the new set", req: &admissionv1.AdmitPodsRequest{ActiveSet: held,
			ActiveChange: &admissionv1.ActiveSetChange{Base: held, Added: refs(t, false, a), AddedAt: []uint32{2}}}, want: "active_change.added_at[0]: 2"},
		{desc: "a bad added reference", req: &admissionv1.AdmitPodsRequest{ActiveSet: held,
			ActiveChange: &admissionv1.ActiveSetChange{Base: held, Added: []*admissionv1.ActivePod{{Digest: base}}, AddedAt: []uint32{0}}},
			want: "active_change.added[0].uid: empty"},
		{desc: "another set's digest", req: &admissionv1.AdmitPodsRequest{ActiveSet: base,
			ActiveChange: &admissionv1.ActiveSetChange{Base: held, Added: refs(t, false, a), AddedAt: []uint32{1}}},
			want: "active_set: not the SHA-256 of active_change's digests"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := admitPods(tc.req)
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want InvalidArgument naming %q", err, tc.want)
			}
		})
	}
	// The refused change's set (c, a) was not kept.
	if _, err := admitPods(&admissionv1.AdmitPodsRequest{ActiveSet: setDigest(refs(t, false, c, a))}); unknownSet(t, err) == nil {
		t.Fatal("the set of a refused change is held")
	}
}
