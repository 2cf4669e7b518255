package podcache

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzDecode: the decoding of an AdmitRequest's pods (sync's bytes,
// through the cache) never panics, and bytes that decode once decode to
// the same pod again (a cache hit).
func FuzzDecode(f *testing.F) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	b, err := pod.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x05, 0x0a, 0x03, 'a', 'b', 'c'})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &Cache{}
		c.Reserve(2)
		first, err := c.Decode(data)
		if err != nil {
			return
		}
		second, err := c.Decode(data)
		if err != nil || second.Name != first.Name || second.UID != first.UID {
			t.Fatalf("the same bytes decoded to %v then %v (%v)", first.ObjectMeta, second, err)
		}
	})
}
