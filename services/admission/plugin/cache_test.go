package plugin

import (
	"bytes"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func cachePod(name, rv string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: rv},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "img-" + name}}},
	}
}

func TestEncoderReuse(t *testing.T) {
	tests := []struct {
		desc string
		// change returns the pod the second call sends, given the first.
		change    func(p *v1.Pod) *v1.Pod
		wantReuse bool
	}{
		{desc: "same object is not re-encoded", change: func(p *v1.Pod) *v1.Pod { return p }, wantReuse: true},
		{desc: "replaced object is re-encoded", change: func(p *v1.Pod) *v1.Pod { q := p.DeepCopy(); q.Spec.Containers[0].Image = "other"; return q }},
		{desc: "new resourceVersion in place is re-encoded", change: func(p *v1.Pod) *v1.Pod { p.ResourceVersion = "2"; p.Spec.Containers[0].Image = "other"; return p }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			var e Encoder
			first := cachePod("a", "1")
			in1, err := e.Encode(&Request{Pod: cachePod("new", ""), ActivePods: []*v1.Pod{first}})
			if err != nil {
				t.Fatal(err)
			}
			second := tc.change(first)
			in2, err := e.Encode(&Request{Pod: cachePod("new", ""), ActivePods: []*v1.Pod{second}})
			if err != nil {
				t.Fatal(err)
			}
			want, err := second.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(in2.ActivePods[0], want) {
				t.Error("second encoding is not the encoding of the pod sent")
			}
			reused := &in1.ActivePods[0][0] == &in2.ActivePods[0][0]
			if reused != tc.wantReuse {
				t.Errorf("encoding reused = %v, want %v", reused, tc.wantReuse)
			}
		})
	}
}

func TestDecodeCache(t *testing.T) {
	var c decodeCache
	a, _ := cachePod("a", "1").Marshal()
	b, _ := cachePod("b", "1").Marshal()

	pa1, err := c.decode(a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := c.decode(b)
	if err != nil {
		t.Fatal(err)
	}
	pa2, err := c.decode(bytes.Clone(a))
	if err != nil {
		t.Fatal(err)
	}
	if pa1 != pa2 {
		t.Error("same encoding decoded twice instead of reused")
	}
	if pb == pa1 || pb.Name != "b" || pa1.Name != "a" {
		t.Errorf("decoded %q and %q, want a and b as distinct objects", pa1.Name, pb.Name)
	}
	if _, err := c.decode([]byte{0xff, 0xff}); err == nil {
		t.Error("garbage decoded without error")
	}
}

// TestCacheGenerationsBounded fills more than two generations and checks the
// cache forgets the oldest instead of growing.
func TestCacheGenerationsBounded(t *testing.T) {
	var c decodeCache
	first, _ := cachePod("p0", "1").Marshal()
	for i := 0; i < 2*cacheGeneration+1; i++ {
		b, _ := cachePod("p"+strconv.Itoa(i), "1").Marshal()
		if _, err := c.decode(b); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.pods.Len(); n > 2*cacheGeneration {
		t.Fatalf("cache holds %d pods, want at most %d", n, 2*cacheGeneration)
	}
	if c.pods.Contains(string(first)) {
		t.Error("oldest entry still held")
	}
}

// fakeSource knows the encodings of some pod objects. Its bytes are
// deliberately not what Marshal would produce, so a test can tell they were
// passed on rather than re-encoded.
type fakeSource map[*v1.Pod][]byte

var _ EncodingSource = fakeSource(nil)

func (f fakeSource) Encoding(p *v1.Pod) ([]byte, bool) {
	b, ok := f[p]
	return b, ok
}

// TestEncoderSource checks that pods the source knows are sent with the
// source's bytes as they are (the pod being admitted too), and that the
// others are still encoded.
func TestEncoderSource(t *testing.T) {
	known, unknown, pod := cachePod("known", "1"), cachePod("unknown", "1"), cachePod("new", "")
	src := fakeSource{known: []byte("bytes of known"), pod: []byte("bytes of new")}
	for _, tc := range []struct {
		desc       string
		active     []*v1.Pod
		wantActive [][]byte
	}{
		{desc: "known active pod is sent as the source has it", active: []*v1.Pod{known}, wantActive: [][]byte{src[known]}},
		{desc: "unknown active pod is encoded", active: []*v1.Pod{unknown}, wantActive: [][]byte{mustMarshal(t, unknown)}},
		{desc: "both in order", active: []*v1.Pod{unknown, known}, wantActive: [][]byte{mustMarshal(t, unknown), src[known]}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			e := Encoder{Source: src}
			in, err := e.Encode(&Request{Pod: pod, ActivePods: tc.active})
			if err != nil {
				t.Fatal(err)
			}
			if &in.Pod[0] != &src[pod][0] {
				t.Errorf("pod sent as %q, want the source's own bytes %q", in.Pod, src[pod])
			}
			if len(in.ActivePods) != len(tc.wantActive) {
				t.Fatalf("%d active pods sent, want %d", len(in.ActivePods), len(tc.wantActive))
			}
			for i := range tc.wantActive {
				if !bytes.Equal(in.ActivePods[i], tc.wantActive[i]) {
					t.Errorf("active pod %d sent as %q, want %q", i, in.ActivePods[i], tc.wantActive[i])
				}
			}
			if e.pods.Contains(encodeKey{pod: known, uid: string(known.UID), resourceVersion: known.ResourceVersion}) {
				t.Error("a pod the source knows was cached by the encoder as well")
			}
		})
	}
}

func mustMarshal(t *testing.T, p *v1.Pod) []byte {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncoderReusesUnchangedSet: a Prepare with the active pods of the one
// before (same objects, order, UIDs and resourceVersions) shares its
// encodings, which a sender that acknowledged them recognises without
// comparing pods; any change makes a new set.
func TestEncoderReusesUnchangedSet(t *testing.T) {
	var e Encoder
	a, b := cachePod("a", "1"), cachePod("b", "1")
	prep := func(active ...*v1.Pod) *Prepared {
		t.Helper()
		p, err := e.Prepare(&Request{Pod: cachePod("new", ""), ActivePods: active})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := prep(a, b)
	sent := &sentSet{from: first.active, raws: first.raws(), at: map[types.UID]int{a.UID: 0, b.UID: 1}}
	if again := prep(a, b); &again.active[0] != &first.active[0] || !sent.holds(again) {
		t.Error("the same pods again: encodings not shared, or not recognised as the sent set")
	}
	if swapped := prep(b, a); &swapped.active[0] == &first.active[0] {
		t.Error("another order shares the encodings of the first")
	}
	c := cachePod("a", "1")
	if replaced := prep(c, b); &replaced.active[0] == &prep(a, b).active[0] {
		t.Error("a new object shares the encodings of the one it replaced")
	}
	before := prep(a, b)
	a.ResourceVersion = "2"
	if bumped := prep(a, b); &bumped.active[0] == &before.active[0] {
		t.Error("a resourceVersion changed in place shares the old encodings")
	}
}
