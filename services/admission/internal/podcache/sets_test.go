package podcache

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
	"github.com/splitlet/splitlet/services/admission/plugin/gencache"
)

// decodeSet decodes pods named prefix0..prefix(n-1) and keeps them as a set.
func decodeSet(t *testing.T, c *Cache, prefix string, n int) ([]Ref, []*v1.Pod) {
	t.Helper()
	refs := make([]Ref, n)
	pods := make([]*v1.Pod, n)
	for i := range n {
		var err error
		if pods[i], refs[i], err = c.DecodeRef(marshal(t, testfixture.Pod(fmt.Sprintf("%s%d", prefix, i), "1", ""))); err != nil {
			t.Fatal(err)
		}
	}
	c.PutSet(SetDigest(refs), refs, pods)
	return refs, pods
}

func TestSet(t *testing.T) {
	var c Cache
	refs, pods := decodeSet(t, &c, "a", 3)
	got, gotRefs, ok := c.Set(SetDigest(refs))
	if !ok || !slices.Equal(got, pods) {
		t.Fatalf("Set = %v %v, want the three pods kept", got, ok)
	}
	if !slices.Equal(gotRefs, refs) {
		t.Errorf("Set's references = %v, want the set's, in order: %v", gotRefs, refs)
	}
	if cap(got) != len(got) {
		t.Errorf("the shared slice has room to append (cap %d, len %d): an append would write into the set", cap(got), len(got))
	}
	// Another order is another set.
	if _, _, ok := c.Set(SetDigest([]Ref{refs[1], refs[0], refs[2]})); ok {
		t.Error("the set in another order is held")
	}
	if got, _, ok := c.Set(SetDigest(nil)); !ok || len(got) != 0 {
		t.Errorf("the empty set: %v %v, want held and empty", got, ok)
	}
	// A pod this cache did not make keeps the set out.
	foreign := []*v1.Pod{pods[0], testfixture.Pod("x", "1", ""), pods[2]}
	foreignRefs := []Ref{refs[0], {UID: "uid-x"}, refs[2]}
	if c.PutSet(SetDigest(foreignRefs), foreignRefs, foreign) {
		t.Error("PutSet says it kept a set with a pod the cache did not decode")
	}
	if _, _, ok := c.Set(SetDigest(foreignRefs)); ok {
		t.Error("a set with a pod the cache did not decode is held")
	}
}

// TestSetsBounded: at most setsHeld sets are kept, the one named least
// recently going first.
func TestSetsBounded(t *testing.T) {
	var c Cache
	first, _ := decodeSet(t, &c, "first", 1)
	second, _ := decodeSet(t, &c, "second", 1)
	for i := range setsHeld - 2 {
		decodeSet(t, &c, fmt.Sprintf("s%d-", i), 1)
	}
	// Naming the first makes the second the least recent.
	if _, _, ok := c.Set(SetDigest(first)); !ok {
		t.Fatal("the first set is not held")
	}
	decodeSet(t, &c, "last", 1)
	if _, _, ok := c.Set(SetDigest(second)); ok {
		t.Error("the least recently named set is still held past the bound")
	}
	if _, _, ok := c.Set(SetDigest(first)); !ok {
		t.Error("the set named last but one was forgotten")
	}
}

// TestSetKeepsItsPods: naming a set keeps its pods' summaries and bytes
// held, as resolving them one by one would, however many other pods pass
// through the cache meanwhile.
func TestSetKeepsItsPods(t *testing.T) {
	var c Cache
	refs, pods := decodeSet(t, &c, "a", 2)
	for round := range 3 {
		for i := range gencache.DefaultLimit {
			if _, err := c.Decode(marshal(t, testfixture.Pod(fmt.Sprintf("other-%d-%d", round, i), "1", ""))); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, ok := c.Set(SetDigest(refs)); !ok {
			t.Fatalf("round %d: the set is not held", round)
		}
	}
	for _, p := range pods {
		if activePodInfo(&c, p) == nil {
			t.Errorf("%s: no summary held though its set was named every generation", p.Name)
		}
		if _, ok := c.Encoding(p); !ok {
			t.Errorf("%s: no encoding held though its set was named every generation", p.Name)
		}
	}
	if held, missing := c.Resolve(refs); len(missing) != 0 || !slices.Equal(held, pods) {
		t.Errorf("Resolve after naming the set: %v missing %v", held, missing)
	}
}
