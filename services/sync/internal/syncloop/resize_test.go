package syncloop

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/nodefeatures"
)

func withCPU(pod *v1.Pod, q string) *v1.Pod {
	p := pod.DeepCopy()
	cpu := v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)}
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: cpu, Limits: cpu.DeepCopy()}
	p.Generation++
	return p
}

// A resize the Admitter refuses leaves the pod at its allocation with
// PodResizePending Deferred and the Admitter's message; housekeeping asks
// again, and once the node has room the resize is granted and the
// condition goes (the kubelet's HandlePodUpdates, handlePodResourcesResize
// and RetryPendingResizes).
func TestResizeDeferredThenGranted(t *testing.T) {
	h := newAdmitHarness(t, FailurePolicyFail)
	rec := &events.FakeRecorder{}
	h.k.opts.Recorder = recorderWithForget{rec}
	ctx := context.Background()
	pod := withCPU(testPod("web", 1), "100m")
	h.k.HandlePodAdditions(ctx, []*v1.Pod{pod})

	h.ad.setDecide(func(p *v1.Pod, active []*v1.Pod) (AdmitResult, error) {
		return AdmitResult{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu"}, nil
	})
	resized := withCPU(pod, "200m")
	h.k.HandlePodUpdates(ctx, []*v1.Pod{resized})

	calls := h.ad.callLog()
	if last := calls[len(calls)-1]; last.pod != "web" || len(last.active) != 0 {
		t.Errorf("last Admit call = %+v, want the resized web judged without itself", last)
	}
	if got := h.k.allocatedPod(resized).Spec.Containers[0].Resources.Limits.Cpu().String(); got != "100m" {
		t.Errorf("allocated cpu = %s while the resize is refused, want 100m", got)
	}
	waitFor(t, "PodResizePending Deferred in the status", func() bool {
		s, ok := h.pm.GetPodStatus(pod.UID)
		c := condition(s, v1.PodResizePending)
		return ok && c != nil && c.Reason == v1.PodReasonDeferred && c.Message == "Node didn't have enough resource: cpu" &&
			c.ObservedGeneration == resized.Generation
	})

	// Asked again at the first housekeeping pass, then not before the
	// retry period unless room was made.
	h.k.HandlePodCleanups(ctx)
	asked := len(h.ad.callLog())
	if asked != len(calls)+1 {
		t.Errorf("Admit calls after the first housekeeping pass = %d, want %d", asked, len(calls)+1)
	}
	h.k.HandlePodCleanups(ctx)
	if n := len(h.ad.callLog()); n != asked {
		t.Errorf("a second pass with nothing freed asked again (%d calls, want %d)", n, asked)
	}

	h.ad.setDecide(admitAll)
	h.k.resizeRetryDue = true // as when a pod is removed
	h.k.HandlePodCleanups(ctx)
	if got := h.k.allocatedPod(resized).Spec.Containers[0].Resources.Limits.Cpu().String(); got != "200m" {
		t.Errorf("allocated cpu = %s after the retry, want 200m", got)
	}
	waitFor(t, "PodResizePending gone from the status", func() bool {
		s, ok := h.pm.GetPodStatus(pod.UID)
		return ok && condition(s, v1.PodResizePending) == nil
	})
	want := []string{
		"Warning ResizeDeferred Pod resize Deferred: Node didn't have enough resource: cpu",
		"Normal ResizeStarted Pod resize started: generation 2",
	}
	if got := rec.Events(); !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

// An update needing a feature the node does not declare (here a resize of
// a non-sidecar init container, InPlacePodVerticalScalingInitContainers)
// gets the kubelet's warning event; one needing nothing undeclared (a
// regular container's resize) gets none.
func TestUpdateNeedingUndeclaredFeatureWarns(t *testing.T) {
	h := newAdmitHarness(t, FailurePolicyFail)
	rec := &events.FakeRecorder{}
	h.k.opts.Recorder = recorderWithForget{rec}
	ctx := context.Background()
	pod := withCPU(testPod("web", 1), "100m")
	pod.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "i"}}
	h.k.HandlePodAdditions(ctx, []*v1.Pod{pod})

	h.k.HandlePodUpdates(ctx, []*v1.Pod{withCPU(pod, "200m")})
	for _, e := range rec.Events() {
		if strings.Contains(e, nodefeatures.FailedCheckReason) {
			t.Errorf("a regular container's resize: event %q", e)
		}
	}

	resized := pod.DeepCopy()
	cpu := v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m")}
	resized.Spec.InitContainers[0].Resources = v1.ResourceRequirements{Requests: cpu, Limits: cpu}
	resized.Generation += 2
	h.k.HandlePodUpdates(ctx, []*v1.Pod{resized})
	want := "Warning FailedNodeDeclaredFeaturesCheck Pod requires node features that are not available: InPlacePodVerticalScalingInitContainers"
	if !slices.Contains(rec.Events(), want) {
		t.Errorf("events = %q, want %q", rec.Events(), want)
	}
}
