package podcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
	"github.com/splitlet/splitlet/services/admission/plugin/gencache"
	"github.com/splitlet/splitlet/services/admission/predicate"
)

func marshal(t *testing.T, p *v1.Pod) []byte {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		desc string
		// first and second are decoded in turn through one cache.
		first, second *v1.Pod
		wantSame      bool
	}{
		{
			desc:  "the same bytes give the same object",
			first: testfixture.Pod("a", "100m", "128Mi"), second: testfixture.Pod("a", "100m", "128Mi"),
			wantSame: true,
		},
		{
			desc:  "a changed pod is a new object",
			first: testfixture.Pod("a", "100m", "128Mi"), second: testfixture.Pod("a", "200m", "128Mi"),
		},
		{
			desc:  "another pod is a new object",
			first: testfixture.Pod("a", "100m", "128Mi"), second: testfixture.Pod("b", "100m", "128Mi"),
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var c Cache
			b1, b2 := marshal(t, tc.first), marshal(t, tc.second)
			p1, err := c.Decode(b1)
			if err != nil {
				t.Fatal(err)
			}
			p2, err := c.Decode(b2)
			if err != nil {
				t.Fatal(err)
			}
			if (p1 == p2) != tc.wantSame {
				t.Fatalf("same object = %v, want %v", p1 == p2, tc.wantSame)
			}
			for i, c := range []struct {
				pod  *v1.Pod
				want *v1.Pod
				raw  []byte
			}{{p1, tc.first, b1}, {p2, tc.second, b2}} {
				if c.pod.Name != c.want.Name || !c.pod.Spec.Containers[0].Resources.Requests.Cpu().Equal(*c.want.Spec.Containers[0].Resources.Requests.Cpu()) {
					t.Errorf("pod %d decoded as %s with cpu %v, want %s with %v", i+1, c.pod.Name,
						c.pod.Spec.Containers[0].Resources.Requests.Cpu(), c.want.Name, c.want.Spec.Containers[0].Resources.Requests.Cpu())
				}
			}
			if raw, ok := c.Encoding(p2); !ok || !bytes.Equal(raw, b2) {
				t.Errorf("Encoding(second) = %d bytes, %v; want the %d bytes it was decoded from", len(raw), ok, len(b2))
			}
			if activePodInfo(&c, p2) == nil {
				t.Error("ActivePodInfo(second) = nil for a pod this cache decoded")
			}
		})
	}
}

// TestActivePodInfoFollowsBytes shows the summaries the predicate handler
// gets from the cache describe the pod's current bytes: an active pod that
// grows from 1 to 2 cpu (new bytes) leaves no room on a 2-cpu node for a pod
// asking 500m, where it left room before.
func TestActivePodInfoFollowsBytes(t *testing.T) {
	var c Cache
	node := testfixture.Node() // 2 cpu
	h := predicate.NewHandler(predicate.Options{
		GetNode:        func(context.Context) (*v1.Node, error) { return node, nil },
		ActivePodInfos: &c,
	})
	pod := testfixture.Pod("new", "500m", "")
	for _, tc := range []struct {
		desc       string
		activeCPU  string
		wantAdmit  bool
		wantReason string
	}{
		{desc: "1 cpu active leaves room", activeCPU: "1", wantAdmit: true},
		{desc: "2 cpu active (new bytes) leaves none", activeCPU: "2", wantReason: "OutOfcpu"},
		{desc: "back to 1 cpu (bytes seen before) leaves room again", activeCPU: "1", wantAdmit: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			active, err := c.Decode(marshal(t, testfixture.Pod("active", tc.activeCPU, "")))
			if err != nil {
				t.Fatal(err)
			}
			res := h.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: pod, OtherPods: []*v1.Pod{active}})
			if res.Admit != tc.wantAdmit || res.Reason != tc.wantReason {
				t.Errorf("Admit = %v %q, want %v %q", res.Admit, res.Reason, tc.wantAdmit, tc.wantReason)
			}
		})
	}
}

func TestUnknownPod(t *testing.T) {
	var c Cache
	if _, err := c.Decode(marshal(t, testfixture.Pod("a", "1", ""))); err != nil {
		t.Fatal(err)
	}
	// The same content, but an object the cache did not make.
	other := testfixture.Pod("a", "1", "")
	if info := activePodInfo(&c, other); info != nil {
		t.Error("ActivePodInfo answered for an object the cache did not decode")
	}
	if _, ok := c.Encoding(other); ok {
		t.Error("Encoding answered for an object the cache did not decode")
	}
}

// activePodInfo is the cache's summary of one pod object, or nil.
func activePodInfo(c *Cache, pod *v1.Pod) *predicate.ActivePodInfo {
	infos := make([]*predicate.ActivePodInfo, 1)
	c.ActivePodInfos([]*v1.Pod{pod}, infos)
	return infos[0]
}

// TestActivePodInfos: the batch lookup answers each pod with the summary
// made when it was decoded, a foreign object with nil, whatever their order.
func TestActivePodInfos(t *testing.T) {
	var c Cache
	a, err := c.Decode(marshal(t, testfixture.Pod("a", "1", "")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Decode(marshal(t, testfixture.Pod("b", "2", "")))
	if err != nil {
		t.Fatal(err)
	}
	other := testfixture.Pod("a", "1", "")
	pods := []*v1.Pod{b, other, a}
	infos := make([]*predicate.ActivePodInfo, len(pods))
	c.ActivePodInfos(pods, infos)
	want := []*predicate.ActivePodInfo{c.lookup(b).info, nil, c.lookup(a).info}
	if want[0] == nil || want[2] == nil || want[0] == want[2] {
		t.Fatalf("ActivePodInfo of the decoded pods: %v", want)
	}
	for i := range pods {
		if infos[i] != want[i] {
			t.Errorf("infos[%d] = %p, want %p", i, infos[i], want[i])
		}
	}
}

func TestDecodeGarbage(t *testing.T) {
	var c Cache
	if _, err := c.Decode([]byte{0xff, 0xff, 0xff}); err == nil {
		t.Fatal("garbage decoded without error")
	}
	if n := c.Len(); n != 0 {
		t.Errorf("cache holds %d entries after a failed decode, want 0", n)
	}
}

// TestDecodeKeepsOwnBytes: the request's buffer may be reused after the
// call, so what the cache hands to plugins must not alias it.
func TestDecodeKeepsOwnBytes(t *testing.T) {
	var c Cache
	b := marshal(t, testfixture.Pod("a", "1", ""))
	want := bytes.Clone(b)
	p, err := c.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	clear(b)
	if raw, _ := c.Encoding(p); !bytes.Equal(raw, want) {
		t.Error("the cached encoding changed with the caller's buffer")
	}
}

func TestBounded(t *testing.T) {
	var c Cache
	first, err := c.Decode(marshal(t, testfixture.Pod("p0", "1", "")))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2*gencache.DefaultLimit; i++ {
		p := testfixture.Pod(fmt.Sprintf("p%d", i), "1", "")
		p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("1Mi")
		if _, err := c.Decode(marshal(t, p)); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Len(); n > 2*gencache.DefaultLimit {
		t.Errorf("cache holds %d pods, want at most %d", n, 2*gencache.DefaultLimit)
	}
	if _, ok := c.Encoding(first); ok {
		t.Error("the first pod is still held after two full generations")
	}
	if activePodInfo(&c, first) != nil {
		t.Error("the first pod's summary is still held after two full generations")
	}
}

// TestConcurrentDecode decodes a shared set of pods from several goroutines
// (run with -race): every result must be the pod its bytes encode, with a
// summary and its own encoding.
func TestConcurrentDecode(t *testing.T) {
	var c Cache
	encoded := make([][]byte, 20)
	for i := range encoded {
		encoded[i] = marshal(t, testfixture.Pod(fmt.Sprintf("p%d", i), "100m", ""))
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for round := range 50 {
				i := (g*7 + round) % len(encoded)
				p, err := c.Decode(encoded[i])
				if err == nil && p.Name != fmt.Sprintf("p%d", i) {
					err = fmt.Errorf("decoded %s, want p%d", p.Name, i)
				}
				if raw, ok := c.Encoding(p); err == nil && (!ok || !bytes.Equal(raw, encoded[i])) {
					err = fmt.Errorf("Encoding(p%d) = %d bytes, %v", i, len(raw), ok)
				}
				if err == nil && activePodInfo(&c, p) == nil {
					err = fmt.Errorf("ActivePodInfo(p%d) = nil", i)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestResolve(t *testing.T) {
	var c Cache
	a, b := testfixture.Pod("a", "100m", "128Mi"), testfixture.Pod("b", "100m", "128Mi")
	pa, refA, err := c.DecodeRef(marshal(t, a))
	if err != nil {
		t.Fatal(err)
	}
	if refA.UID != "uid-a" || refA.Digest != sha256.Sum256(marshal(t, a)) {
		t.Fatalf("ref %+v, want uid-a and the SHA-256 of the bytes", refA)
	}
	refB := Ref{UID: "uid-b", Digest: sha256.Sum256(marshal(t, b))}
	changedA := Ref{UID: "uid-a", Digest: sha256.Sum256(marshal(t, testfixture.Pod("a", "200m", "128Mi")))}
	for _, tc := range []struct {
		desc        string
		refs        []Ref
		wantPods    []*v1.Pod
		wantMissing []int
	}{
		{desc: "held", refs: []Ref{refA}, wantPods: []*v1.Pod{pa}},
		{desc: "never sent", refs: []Ref{refA, refB}, wantMissing: []int{1}},
		{desc: "the same uid with other bytes", refs: []Ref{changedA, refA}, wantMissing: []int{0}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pods, missing := c.Resolve(tc.refs)
			if fmt.Sprint(missing) != fmt.Sprint(tc.wantMissing) {
				t.Fatalf("missing %v, want %v", missing, tc.wantMissing)
			}
			if len(pods) != len(tc.wantPods) {
				t.Fatalf("%d pods, want %d", len(pods), len(tc.wantPods))
			}
			for i := range pods {
				if pods[i] != tc.wantPods[i] {
					t.Errorf("pod %d is not the object decoded before", i)
				}
			}
		})
	}
}

// TestReserveKeepsLargeRequests: a node's worth of pods far above one
// default generation, decoded in one request and then named by reference
// in the next, is held whole once Reserve sized the cache for it; without
// Reserve the generations forget the first pods.
func TestReserveKeepsLargeRequests(t *testing.T) {
	n := 3 * gencache.DefaultLimit
	var raws [][]byte
	var refs []Ref
	for i := range n {
		b := marshal(t, testfixture.Pod(fmt.Sprintf("p%d", i), "", ""))
		raws = append(raws, b)
		refs = append(refs, Ref{UID: fmt.Sprintf("uid-p%d", i), Digest: sha256.Sum256(b)})
	}
	for _, tc := range []struct {
		desc        string
		reserve     bool
		wantMissing bool
	}{
		{desc: "reserved", reserve: true},
		{desc: "not reserved", wantMissing: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var c Cache
			for round := range 3 {
				if tc.reserve {
					c.Reserve(n)
				}
				if round == 0 {
					for _, b := range raws {
						if _, err := c.Decode(b); err != nil {
							t.Fatal(err)
						}
					}
					continue
				}
				_, missing := c.Resolve(refs)
				if (len(missing) > 0) != tc.wantMissing {
					t.Fatalf("round %d: %d of %d refs missing, want missing %v", round, len(missing), n, tc.wantMissing)
				}
				if len(missing) > 0 {
					return
				}
			}
		})
	}
}
