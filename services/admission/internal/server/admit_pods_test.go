package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/proto/splitlet/admission/v1/admissionv1connect"
	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// ref is pod's reference, with its bytes when full.
func ref(t *testing.T, pod *v1.Pod, full bool) *admissionv1.ActivePod {
	t.Helper()
	b := marshal(t, pod)[0]
	d := sha256.Sum256(b)
	a := &admissionv1.ActivePod{Uid: string(pod.UID), Digest: d[:]}
	if full {
		a.Pod = b
	}
	return a
}

func refs(t *testing.T, full bool, pods ...*v1.Pod) []*admissionv1.ActivePod {
	t.Helper()
	var out []*admissionv1.ActivePod
	for _, p := range pods {
		out = append(out, ref(t, p, full))
	}
	return out
}

// admitSequentially is what AdmitPods must equal: one Admit per pod, the
// active set sent in full, each admitted pod joining it, stopping after
// the first answer with victims.
func admitSequentially(t *testing.T, client admissionv1connect.AdmissionServiceClient, pods, active []*v1.Pod) []*admissionv1.AdmitResponse {
	t.Helper()
	active = slices.Clone(active)
	var out []*admissionv1.AdmitResponse
	for _, p := range pods {
		resp, err := client.Admit(context.Background(), connect.NewRequest(&admissionv1.AdmitRequest{
			Pod: marshal(t, p)[0], ActivePods: marshal(t, active...),
		}))
		if err != nil {
			t.Fatalf("Admit %s: %v", p.Name, err)
		}
		out = append(out, resp.Msg)
		if len(resp.Msg.Victims) > 0 {
			break
		}
		if resp.Msg.Admit {
			active = append(active, p)
		}
	}
	return out
}

func TestAdmitPodsEqualsSequentialAdmit(t *testing.T) {
	tp := testfixture.Pod
	seven := testfixture.FullOfPods()[:7]
	for _, tc := range []struct {
		desc   string
		active []*v1.Pod
		pods   []*v1.Pod
		// wantReasons are the answers' reasons in order ("" admitted);
		// they pin what the sequential reference must also say.
		wantReasons []string
		wantVictims string
	}{
		{
			desc:        "pods overflow in the middle: the later ones are OutOfpods",
			active:      seven,
			pods:        []*v1.Pod{tp("n1", "10m", "10Mi"), tp("n2", "10m", "10Mi"), tp("n3", "10m", "10Mi"), tp("n4", "10m", "10Mi"), tp("n5", "10m", "10Mi")},
			wantReasons: []string{"", "", "", lifecycle.OutOfPods, lifecycle.OutOfPods},
		},
		{
			desc:        "memory overflows in the middle; a rejected pod does not join, so a smaller one still fits",
			pods:        []*v1.Pod{tp("m1", "100m", "400Mi"), tp("m2", "100m", "400Mi"), tp("m3", "100m", "400Mi"), tp("m4", "100m", "100Mi")},
			wantReasons: []string{"", "", "OutOfmemory", ""},
		},
		{
			desc:        "stops at the first answer with victims",
			active:      testfixture.FullOfPods(),
			pods:        []*v1.Pod{tp("late", "10m", "10Mi"), testfixture.Critical(tp("dns", "", "")), tp("never", "", "")},
			wantReasons: []string{lifecycle.OutOfPods, lifecycle.OutOfPods},
			wantVictims: "besteffort",
		},
		{
			desc:        "a pod rejected for another reason between admitted ones",
			pods:        []*v1.Pod{tp("a", "", ""), testfixture.WithNodeSelector(tp("elsewhere", "", ""), map[string]string{"zone": "b"}), tp("c", "", "")},
			wantReasons: []string{"", "NodeAffinity", ""},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			httpClient, url := startServer(t, newTestService(t, nil))
			client := admissionv1connect.NewAdmissionServiceClient(httpClient, url, connect.WithGRPC())
			refClient := admissionv1connect.NewAdmissionServiceClient(httpClient, url, connect.WithGRPC())
			want := admitSequentially(t, refClient, tc.pods, tc.active)

			resp, err := client.AdmitPods(context.Background(), connect.NewRequest(&admissionv1.AdmitPodsRequest{
				Pods: marshal(t, tc.pods...), Active: refs(t, true, tc.active...),
			}))
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Msg.Results
			if len(got) != len(want) {
				t.Fatalf("%d answers, want %d (sequential)", len(got), len(want))
			}
			var reasons []string
			for i := range got {
				if !proto.Equal(got[i], want[i]) {
					t.Errorf("answer %d (%s) = %v, sequential Admit said %v", i, tc.pods[i].Name, got[i], want[i])
				}
				reasons = append(reasons, got[i].Reason)
			}
			if !slices.Equal(reasons, tc.wantReasons) {
				t.Errorf("reasons %q, want %q", reasons, tc.wantReasons)
			}
			last := got[len(got)-1]
			if tc.wantVictims != "" && (len(last.Victims) != 1 || last.Victims[0].Name != tc.wantVictims) {
				t.Errorf("last answer's victims %v, want %s", last.Victims, tc.wantVictims)
			}
		})
	}
}

func TestAdmitPodsInvalid(t *testing.T) {
	tp := testfixture.Pod
	for _, tc := range []struct {
		desc     string
		req      func(t *testing.T) *admissionv1.AdmitPodsRequest
		wantCode connect.Code
		wantText string
	}{
		{
			desc:     "no pods",
			req:      func(t *testing.T) *admissionv1.AdmitPodsRequest { return &admissionv1.AdmitPodsRequest{} },
			wantCode: connect.CodeInvalidArgument, wantText: "pods: empty",
		},
		{
			desc: "undecodable pod is named by index",
			req: func(t *testing.T) *admissionv1.AdmitPodsRequest {
				return &admissionv1.AdmitPodsRequest{Pods: [][]byte{marshal(t, tp("a", "", ""))[0], []byte("\xff\xffnot a pod")}}
			},
			wantCode: connect.CodeInvalidArgument, wantText: "pods[1]",
		},
		{
			desc: "a reference without a uid",
			req: func(t *testing.T) *admissionv1.AdmitPodsRequest {
				r := ref(t, tp("db", "", ""), true)
				r.Uid = ""
				return &admissionv1.AdmitPodsRequest{Pods: marshal(t, tp("a", "", "")), Active: []*admissionv1.ActivePod{r}}
			},
			wantCode: connect.CodeInvalidArgument, wantText: "active[0].uid: empty",
		},
		{
			desc: "a digest that is not SHA-256 sized",
			req: func(t *testing.T) *admissionv1.AdmitPodsRequest {
				r := ref(t, tp("db", "", ""), false)
				r.Digest = r.Digest[:8]
				return &admissionv1.AdmitPodsRequest{Pods: marshal(t, tp("a", "", "")), Active: []*admissionv1.ActivePod{r}}
			},
			wantCode: connect.CodeInvalidArgument, wantText: "active[0].digest: 8 bytes",
		},
		{
			desc: "a digest not of the bytes sent",
			req: func(t *testing.T) *admissionv1.AdmitPodsRequest {
				r := ref(t, tp("db", "", ""), true)
				r.Digest = ref(t, tp("db", "1", ""), false).Digest
				return &admissionv1.AdmitPodsRequest{Pods: marshal(t, tp("a", "", "")), Active: []*admissionv1.ActivePod{r}}
			},
			wantCode: connect.CodeInvalidArgument, wantText: "active[0].digest: not the SHA-256",
		},
		{
			desc: "a uid not of the pod sent",
			req: func(t *testing.T) *admissionv1.AdmitPodsRequest {
				r := ref(t, tp("db", "", ""), true)
				r.Uid = "uid-other"
				return &admissionv1.AdmitPodsRequest{Pods: marshal(t, tp("a", "", "")), Active: []*admissionv1.ActivePod{r}}
			},
			wantCode: connect.CodeInvalidArgument, wantText: `active[0].uid: "uid-other", but the pod's is "uid-db"`,
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			httpClient, url := startServer(t, newTestService(t, nil))
			client := admissionv1connect.NewAdmissionServiceClient(httpClient, url)
			_, err := client.AdmitPods(context.Background(), connect.NewRequest(tc.req(t)))
			if connect.CodeOf(err) != tc.wantCode || err == nil || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("error %v, want code %v naming %q", err, tc.wantCode, tc.wantText)
			}
		})
	}
}

// preconditionDetail returns err's detail of type T; err must be
// FailedPrecondition with such a detail.
func preconditionDetail[T proto.Message](t *testing.T, err error) T {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeFailedPrecondition {
		t.Fatalf("error %v, want FailedPrecondition", err)
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if u, ok := v.(T); derr == nil && ok {
			return u
		}
	}
	var none T
	t.Fatalf("FailedPrecondition %v without a %T detail", err, none)
	return none
}

// unknownUIDs returns the UIDs of err's UnknownActivePods detail.
func unknownUIDs(t *testing.T, err error) []string {
	t.Helper()
	return preconditionDetail[*admissionv1.UnknownActivePods](t, err).GetUids()
}

// TestActivePodsByReference walks the reference protocol across a server
// restart: pods sent in full once are then named by reference alone; a new
// server instance does not hold them and says which, over every protocol;
// sent again in full, they are held.
func TestActivePodsByReference(t *testing.T) {
	tp := testfixture.Pod
	active := []*v1.Pod{tp("a", "100m", "300Mi"), tp("b", "100m", "300Mi"), tp("c", "100m", "300Mi")}
	// 900Mi active leaves no room for 200Mi: a decision that needs all
	// three pods resolved.
	newPod := marshal(t, tp("new", "100m", "200Mi"))[0]
	admit := func(t *testing.T, client admissionv1connect.AdmissionServiceClient, act []*admissionv1.ActivePod) (*admissionv1.AdmitResponse, error) {
		t.Helper()
		resp, err := client.Admit(context.Background(), connect.NewRequest(&admissionv1.AdmitRequest{Pod: newPod, Active: act}))
		if err != nil {
			return nil, err
		}
		return resp.Msg, nil
	}
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			httpClient, url := startServer(t, newTestService(t, nil))
			client := admissionv1connect.NewAdmissionServiceClient(httpClient, url, p.opts...)
			for _, round := range []struct {
				desc string
				act  []*admissionv1.ActivePod
			}{
				{desc: "in full", act: refs(t, true, active...)},
				{desc: "by reference", act: refs(t, false, active...)},
			} {
				got, err := admit(t, client, round.act)
				if err != nil {
					t.Fatalf("%s: %v", round.desc, err)
				}
				if got.Admit || got.Reason != "OutOfmemory" {
					t.Fatalf("%s: admit %v reason %q, want OutOfmemory (the three pods counted)", round.desc, got.Admit, got.Reason)
				}
			}

			// A restart: a new server that holds nothing but "a", which
			// it was sent in full before.
			httpClient2, url2 := startServer(t, newTestService(t, nil))
			restarted := admissionv1connect.NewAdmissionServiceClient(httpClient2, url2, p.opts...)
			if _, err := admit(t, restarted, refs(t, true, active[0])); err != nil {
				t.Fatal(err)
			}
			_, err := admit(t, restarted, refs(t, false, active...))
			if got := unknownUIDs(t, err); !slices.Equal(got, []string{"uid-b", "uid-c"}) {
				t.Fatalf("unknown UIDs %v, want [uid-b uid-c]", got)
			}
			if !strings.Contains(err.Error(), "uid-b, uid-c") {
				t.Errorf("message %q does not list the UIDs", err)
			}
			// The client resends exactly those.
			resend := []*admissionv1.ActivePod{ref(t, active[0], false), ref(t, active[1], true), ref(t, active[2], true)}
			got, err := admit(t, restarted, resend)
			if err != nil || got.Reason != "OutOfmemory" {
				t.Fatalf("after resending: %v %v, want OutOfmemory", got, err)
			}
			if got, err := admit(t, restarted, refs(t, false, active...)); err != nil || got.Reason != "OutOfmemory" {
				t.Fatalf("by reference after resending: %v %v", got, err)
			}
		})
	}
}

// TestOldAndNewActiveSetsAgree: the same active set sent as active_pods
// (old clients) and as references gives the same decision, and both may be
// mixed in one request.
func TestOldAndNewActiveSetsAgree(t *testing.T) {
	tp := testfixture.Pod
	httpClient, url := startServer(t, newTestService(t, nil))
	client := admissionv1connect.NewAdmissionServiceClient(httpClient, url)
	newPod := marshal(t, tp("new", "100m", "200Mi"))[0]
	a, b := tp("a", "100m", "500Mi"), tp("b", "100m", "400Mi")
	for _, tc := range []struct {
		desc string
		req  *admissionv1.AdmitRequest
	}{
		{desc: "old", req: &admissionv1.AdmitRequest{Pod: newPod, ActivePods: marshal(t, a, b)}},
		{desc: "references", req: &admissionv1.AdmitRequest{Pod: newPod, Active: refs(t, true, a, b)}},
		// b was sent in full by the case before.
		{desc: "mixed", req: &admissionv1.AdmitRequest{Pod: newPod, ActivePods: marshal(t, a), Active: refs(t, false, b)}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			resp, err := client.Admit(context.Background(), connect.NewRequest(tc.req))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Msg.Admit || resp.Msg.Reason != "OutOfmemory" {
				t.Errorf("admit %v reason %q, want OutOfmemory (900Mi active + 200Mi > 1Gi)", resp.Msg.Admit, resp.Msg.Reason)
			}
		})
	}
}
