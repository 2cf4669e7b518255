package harness

import (
	"strings"
	"testing"

	"github.com/splitlet/splitlet/internal/stack"
)

func TestProfileTargets(t *testing.T) {
	full := &stack.Stack{
		GatewayMetricsAddr: "127.0.0.1:1", AdmissionAddr: "127.0.0.1:2", SyncAddr: "127.0.0.1:3",
		Admission: &stack.Process{Name: "admission"}, Sync: &stack.Process{Name: "sync"},
	}
	gatewayOnly := &stack.Stack{GatewayMetricsAddr: "127.0.0.1:1"}
	for _, tc := range []struct {
		desc       string
		profileDir string
		s          *stack.Stack
		want       string // name=url, sorted
	}{
		{desc: "no -profile: none", s: full},
		{desc: "three processes", profileDir: "p", s: full,
			want: "admission=http://127.0.0.1:2 gateway=http://127.0.0.1:1 sync=http://127.0.0.1:3"},
		{desc: "the gateway beside the kubelet", profileDir: "p", s: gatewayOnly, want: "gateway=http://127.0.0.1:1"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var got []string
			for name, url := range profileTargets(Config{ProfileDir: tc.profileDir}, tc.s) {
				got = append(got, name+"="+url)
			}
			for i := 1; i < len(got); i++ {
				for j := i; j > 0 && got[j] < got[j-1]; j-- {
					got[j], got[j-1] = got[j-1], got[j]
				}
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("targets = %q, want %q", strings.Join(got, " "), tc.want)
			}
		})
	}
}
