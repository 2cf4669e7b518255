package plugin

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
)

// FuzzDecodeRequest: the plugin protocol's request decoding never panics
// on any bytes, and what it accepts encodes and decodes again.
func FuzzDecodeRequest(f *testing.F) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	podBytes, err := pod.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	nodeBytes, err := node.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(podBytes, podBytes, nodeBytes)
	f.Add(podBytes, []byte{}, []byte{})
	f.Add([]byte{0x0a, 0xff}, []byte{0x12}, []byte{0x1a, 0x01})
	f.Fuzz(func(t *testing.T, pod, active, node []byte) {
		in := &pluginv1.AdmitRequest{Pod: pod, Node: node}
		if len(active) > 0 {
			in.ActivePods = [][]byte{active}
		}
		r, err := DecodeRequest(in)
		if err != nil {
			return
		}
		again, err := EncodeRequest(r)
		if err != nil {
			t.Fatalf("a decoded request does not encode: %v", err)
		}
		if _, err := DecodeRequest(again); err != nil {
			t.Fatalf("a re-encoded request does not decode: %v", err)
		}
	})
}
