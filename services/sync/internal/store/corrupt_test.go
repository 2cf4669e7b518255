package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// A damaged pods.db is never opened as empty and never panics: Open fails
// with ErrCorrupt (or, where bbolt recovers from a damaged meta page by its
// twin, opens with every pod intact).
func TestOpenDetectsCorruption(t *testing.T) {
	const pods = 200
	for _, tc := range []struct {
		desc string
		// damage changes the file's bytes.
		damage func(data []byte) []byte
		// mayRecover: bbolt keeps two meta pages and opens from the valid
		// one, so a store that opens must hold every pod.
		mayRecover bool
	}{
		{desc: "truncated to half", damage: func(d []byte) []byte { return d[:len(d)/2] }},
		{desc: "truncated inside the header", damage: func(d []byte) []byte { return d[:100] }},
		{desc: "empty file", damage: func(d []byte) []byte { return d[:0] }},
		{desc: "garbage in both meta pages", damage: func(d []byte) []byte { garbage(d, 16, 4096*2-16, 1); return d }},
		{desc: "garbage in one meta page", mayRecover: true, damage: func(d []byte) []byte { garbage(d, 4096+16, 200, 2); return d }},
		{desc: "garbage in every data page", damage: func(d []byte) []byte {
			for off := 4096 * 2; off+4096 <= len(d); off += 4096 {
				garbage(d, off, 64, uint64(off))
			}
			return d
		}},
		{desc: "garbage in the middle of the data", damage: func(d []byte) []byte { garbage(d, len(d)/2, 8192, 3); return d }},
		{desc: "a record's value overwritten", damage: func(d []byte) []byte { overwriteValue(d); return d }},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pods.db")
			st, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			for i := range pods {
				if err := st.Put(pod("default", fmt.Sprintf("p%03d", i), "busybox")); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.damage(data), 0o600); err != nil {
				t.Fatal(err)
			}

			st, err = Open(path)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Open = %v, want ErrCorrupt", err)
				}
				t.Logf("Open: %v", err)
				return
			}
			defer st.Close()
			list, err := st.List()
			if !tc.mayRecover {
				t.Fatalf("Open of a damaged file succeeded (List: %d pods, %v), want ErrCorrupt", len(list), err)
			}
			if err != nil || len(list) != pods {
				t.Fatalf("recovered store lists %d pods (%v), want all %d", len(list), err, pods)
			}
		})
	}
}

// garbage overwrites n bytes at off with random ones (seeded, so a failure
// can be replayed).
func garbage(d []byte, off, n int, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 42))
	for i := off; i < off+n && i < len(d); i++ {
		d[i] = byte(r.UintN(256))
	}
}

// overwriteValue breaks the JSON of one stored pod in place, leaving the
// page structure intact: only decoding the record finds it.
func overwriteValue(d []byte) {
	needle := []byte(`"image":"busybox"`)
	for i := 0; i+len(needle) <= len(d); i++ {
		if string(d[i:i+len(needle)]) == string(needle) {
			copy(d[i:], `"image":{busybox`)
			return
		}
	}
	panic("no pod record found to damage")
}
