package server

import (
	"context"
	"testing"

	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"

	"github.com/splitlet/splitlet/gateway/policy"
)

// PolicyService answers with the policy the CRI calls are checked against:
// each violation names its kind and what broke it; an allowed pod gets none.
func TestPolicyServiceCheckPod(t *testing.T) {
	h := start(t, Config{Policy: policy.DefaultConfig()}, newTestRuntime())
	client := gatewayv1.NewPolicyServiceClient(h.conn)
	resp, err := client.CheckPod(context.Background(), &gatewayv1.CheckPodRequest{
		Namespace: "default", Name: "web", HostPid: true,
		Containers: []*gatewayv1.ContainerSecurity{
			{Name: "ok", AddCapabilities: []string{"NET_BIND_SERVICE"}},
			{Name: "admin", AddCapabilities: []string{"SYS_ADMIN"}},
			{Name: "root", Privileged: true},
		},
		HostPaths: []*gatewayv1.HostPath{{VolumeIndex: 2, Path: "/etc"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	type v struct {
		kind  gatewayv1.Violation_Kind
		index int32
		value string
	}
	var got []v
	for _, x := range resp.GetViolations() {
		if x.GetRule() == "" {
			t.Errorf("violation %v names no rule", x)
		}
		got = append(got, v{x.GetKind(), x.GetIndex(), x.GetValue()})
	}
	want := []v{
		{gatewayv1.Violation_KIND_HOST_PID, 0, ""},
		{gatewayv1.Violation_KIND_CAPABILITY, 1, "SYS_ADMIN"},
		{gatewayv1.Violation_KIND_PRIVILEGED, 2, ""},
		{gatewayv1.Violation_KIND_HOST_PATH, 2, "/etc"},
	}
	if len(got) != len(want) {
		t.Fatalf("violations %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("violation %d = %v, want %v", i, got[i], want[i])
		}
	}

	resp, err = client.CheckPod(context.Background(), &gatewayv1.CheckPodRequest{
		Containers: []*gatewayv1.ContainerSecurity{{Name: "plain"}},
		HostPaths:  []*gatewayv1.HostPath{{Path: "/var/lib/splitlet/sync/pods/u/volumes/x"}},
	})
	if err != nil || len(resp.GetViolations()) != 0 {
		t.Errorf("a plain pod: %v, %v; want no violation", resp.GetViolations(), err)
	}
}
