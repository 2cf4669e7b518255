package test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
)

// featureRuntime is a CRI RuntimeService whose Status reports whether it
// honours supplementalGroupsPolicy Strict, as the test sets it. Every other
// call (the eviction manager's stats) is unimplemented, which admission
// tolerates.
type featureRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	strict atomic.Bool
}

func (f *featureRuntime) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true}, {Type: runtimeapi.NetworkReady, Status: true},
		}},
		Features: &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: f.strict.Load()},
	}, nil
}

func strictPod() *v1.Pod {
	pod := testfixture.Pod("strict", "100m", "64Mi")
	strict := v1.SupplementalGroupsPolicyStrict
	pod.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroups: []int64{60000}, SupplementalGroupsPolicy: &strict}
	return pod
}

// admitStrict asks admission about strictPod with no other pod active and
// returns whether it was admitted and the reason if not.
func admitStrict(ctx context.Context, t *testing.T, client admissionv1.AdmissionServiceClient) (bool, string) {
	t.Helper()
	resp, err := client.Admit(ctx, &admissionv1.AdmitRequest{Pod: encode(t, strictPod())[0]})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Admit, resp.Reason
}

// A pod asking for supplementalGroupsPolicy Strict is admitted when the
// runtime behind gatewayEndpoint says it honours it, and refused once the
// runtime stops saying so (a runtime replaced by an older one), as the
// kubelet's predicate handler judges it against the node features its
// updateRuntimeUp reads from CRI Status every 5 s.
func TestProcessSupplementalGroupsPolicyFromRuntime(t *testing.T) {
	rt := &featureRuntime{}
	rt.strict.Store(true)
	sock := testfixture.ServeCRI(t, rt)
	p := start(t, nodeConfig(t, "gatewayEndpoint: unix://"+sock))
	client := admissionv1.NewAdmissionServiceClient(p.dial(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The first read happens as the process starts serving; until then the
	// node declares no support.
	waitAdmit(ctx, t, client, true, "")
	rt.strict.Store(false)
	waitAdmit(ctx, t, client, false, "SupplementalGroupsPolicyNotSupported")
}

// The configuration's supplementalGroupsPolicy, when set, is what the node
// declares whatever the runtime says.
func TestProcessSupplementalGroupsPolicyConfigured(t *testing.T) {
	rt := &featureRuntime{}
	rt.strict.Store(true)
	sock := testfixture.ServeCRI(t, rt)
	p := start(t, fmt.Sprintf(`
node:
  name: %s
  rootDir: %s
  capacity: {cpu: "2", memory: 1Gi, pods: "10"}
  supplementalGroupsPolicy: false
eviction:
  hard: {}
gatewayEndpoint: unix://%s
`, testfixture.NodeName, t.TempDir(), sock))
	client := admissionv1.NewAdmissionServiceClient(p.dial(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if admit, reason := admitStrict(ctx, t, client); admit || reason != "SupplementalGroupsPolicyNotSupported" {
		t.Fatalf("admit %v reason %q, want a refusal SupplementalGroupsPolicyNotSupported", admit, reason)
	}
}

// waitAdmit asks until the answer for strictPod is the one wanted, or fails
// when ctx ends.
func waitAdmit(ctx context.Context, t *testing.T, client admissionv1.AdmissionServiceClient, want bool, wantReason string) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		admit, reason := admitStrict(ctx, t, client)
		if admit == want && reason == wantReason {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("admit %v reason %q, still not %v %q", admit, reason, want, wantReason)
		case <-tick.C:
		}
	}
}
