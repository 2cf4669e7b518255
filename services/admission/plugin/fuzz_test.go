package plugin

import (
	"context"
	"fmt"
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

// FuzzActiveSets: whatever sequence of active sets a host sends, as whole
// sets or changes, with the plugin losing its sets at any point, the plugin
// hands Admit exactly the host's set. Each byte of ops is one step: its low
// three bits pick one of eight pods, the next two its version, bit 5 removes
// it instead, bit 6 makes the plugin forget its sets, bit 7 ends the set of
// this call (sends it).
func FuzzActiveSets(f *testing.F) {
	f.Add([]byte{0x80, 0x01, 0x82, 0x21, 0x80, 0x49, 0x8a})
	f.Add([]byte{0x00, 0x01, 0x02, 0x03, 0x84, 0x24, 0x25, 0x0b, 0x80, 0x40, 0x80})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 256 {
			return
		}
		srv := &grpcServer{impl: echo{}}
		var host activeSender
		host.setKeeps(true)
		current := map[int]*v1.Pod{}
		send := func() {
			p := &Prepared{pod: []byte{0x0a, 0x00}}
			var want []*v1.Pod
			for i := range 8 {
				if pod, ok := current[i]; ok {
					raw, err := pod.Marshal()
					if err != nil {
						t.Fatal(err)
					}
					p.active = append(p.active, preparedPod{uid: pod.UID, raw: raw})
					want = append(want, pod)
				}
			}
			in, sent := host.request(p, false)
			out, err := srv.Admit(context.Background(), in)
			if err != nil && isActiveSetUnknown(err) {
				host.forget(in.GetActiveSet().GetBaseGeneration())
				in, sent = host.request(p, true)
				out, err = srv.Admit(context.Background(), in)
			}
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			host.acknowledge(sent)
			if got := out.GetMessage(); got != names(want) {
				t.Fatalf("plugin saw %q, want %q", got, names(want))
			}
		}
		for _, op := range ops {
			i, version := int(op&7), int(op>>3&3)
			if op&0x20 != 0 {
				delete(current, i)
			} else {
				current[i] = setPod(fmt.Sprint(i), fmt.Sprint(version))
			}
			if op&0x40 != 0 {
				srv.sets = activeSets{}
			}
			if op&0x80 != 0 {
				send()
			}
		}
		send()
	})
}

// FuzzActiveSetWire: any active_set a plugin is sent, against a set it
// holds, is answered without a panic, and a refused one leaves the held
// set as it was.
func FuzzActiveSetWire(f *testing.F) {
	a, err := setPod("a", "1").Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint64(1), uint64(2), a, "uid-a", "s")
	f.Add(uint64(1), uint64(1), []byte{}, "", "s")
	f.Add(uint64(7), uint64(0), []byte{0xff}, "uid-x", "t")
	f.Fuzz(func(t *testing.T, base, gen uint64, changed []byte, removed, session string) {
		srv := &grpcServer{impl: echo{}}
		whole := &pluginv1.AdmitRequest{Pod: []byte{0x0a, 0x00}, ActivePods: [][]byte{a}, ActiveSet: &pluginv1.ActiveSet{Session: "s", Generation: 1}}
		if _, err := srv.Admit(context.Background(), whole); err != nil {
			t.Fatal(err)
		}
		set := &pluginv1.ActiveSet{Session: session, Generation: gen, BaseGeneration: base}
		if len(changed) > 0 {
			set.ChangedPods = [][]byte{changed}
		}
		if removed != "" {
			set.RemovedUids = []string{removed}
		}
		if _, err := srv.Admit(context.Background(), &pluginv1.AdmitRequest{Pod: []byte{0x0a, 0x00}, ActiveSet: set}); err != nil {
			if got := names(srv.sets.sets[1]); session == "s" && got != "a@1" {
				t.Fatalf("a refused request changed generation 1 to %q", got)
			}
		}
	})
}
