package gencache

import (
	"strconv"
	"testing"
)

func TestCache(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		puts     []string // keys put in order, each with value len(key)
		gets     []string // keys read after the puts, in order
		peeks    []string // keys peeked after the puts, in order
		touches  []string // keys touched (value len(key)) after the gets
		putAfter []string // keys put after the gets
		held     []string
		gone     []string
	}{
		{
			desc: "hits return what was put",
			puts: []string{"a", "bb"},
			held: []string{"a", "bb"},
			gone: []string{"c"},
		},
		{
			desc: "a full generation rotates; the previous one is still held",
			puts: []string{"a", "b", "c"},
			held: []string{"a", "b", "c"},
		},
		{
			desc: "two rotations forget the oldest generation",
			puts: []string{"a", "b", "c", "d", "e"},
			held: []string{"c", "d", "e"},
			gone: []string{"a", "b"},
		},
		{
			desc:     "a hit in the previous generation is promoted and survives the next rotation",
			puts:     []string{"a", "b", "c"},
			gets:     []string{"a"},
			putAfter: []string{"d", "e"},
			held:     []string{"a", "d", "e"},
			gone:     []string{"b"},
		},
		{
			desc:     "a peek does not promote",
			puts:     []string{"a", "b", "c"},
			peeks:    []string{"a"},
			putAfter: []string{"d", "e"},
			held:     []string{"c", "d", "e"},
			gone:     []string{"a", "b"},
		},
		{
			desc:     "a touch promotes, and stores a forgotten key again",
			puts:     []string{"a", "b", "c", "d", "e"},
			touches:  []string{"c", "a"},
			putAfter: []string{"f"},
			held:     []string{"a", "c", "f"},
			gone:     []string{"b", "d"},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := Cache[string, int]{Limit: 2}
			for _, k := range tc.puts {
				c.Put(k, len(k))
			}
			for _, k := range tc.gets {
				if v, ok := c.Get(k); !ok || v != len(k) {
					t.Fatalf("Get(%q) = %d, %v; want %d, true", k, v, ok, len(k))
				}
			}
			for _, k := range tc.peeks {
				if v, ok := c.Peek(k); !ok || v != len(k) {
					t.Fatalf("Peek(%q) = %d, %v; want %d, true", k, v, ok, len(k))
				}
			}
			for _, k := range tc.touches {
				c.Touch(k, len(k))
			}
			for _, k := range tc.putAfter {
				c.Put(k, len(k))
			}
			for _, k := range tc.held {
				if v, ok := c.Get(k); !ok || v != len(k) {
					t.Errorf("Get(%q) = %d, %v; want %d, true", k, v, ok, len(k))
				}
			}
			for _, k := range tc.gone {
				if c.Contains(k) {
					t.Errorf("%q still held", k)
				}
			}
		})
	}
}

// TestCacheBounded fills more than two generations and checks the cache
// stays within 2*Limit entries.
func TestCacheBounded(t *testing.T) {
	var c Cache[string, int]
	for i := range 5*DefaultLimit + 3 {
		c.Put(strconv.Itoa(i), i)
		if n := c.Len(); n > 2*DefaultLimit {
			t.Fatalf("after %d puts the cache holds %d entries, want at most %d", i+1, n, 2*DefaultLimit)
		}
	}
	if c.Contains("0") {
		t.Error("the first entry is still held after five generations")
	}
}

func TestGetBytes(t *testing.T) {
	var c Cache[string, int]
	c.Put("pod-a", 1)
	if v, ok := GetBytes(&c, []byte("pod-a")); !ok || v != 1 {
		t.Errorf("GetBytes(pod-a) = %d, %v; want 1, true", v, ok)
	}
	if _, ok := GetBytes(&c, []byte("pod-b")); ok {
		t.Error("GetBytes(pod-b) hit; it was never put")
	}
	key := []byte("pod-a")
	if n := testing.AllocsPerRun(100, func() { GetBytes(&c, key) }); n != 0 {
		t.Errorf("a hit allocates %v times, want 0", n)
	}
}
