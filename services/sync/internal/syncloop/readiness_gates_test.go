package syncloop

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/source"
	"github.com/splitlet/splitlet/services/sync/internal/worker"
)

// A readiness gate's condition set by someone else (a status-only change
// from the source) makes the pod Ready, and unset again makes it unready,
// without waiting for a periodic resync (the e2e spec "Pods should support
// pod readiness gates").
func TestReadinessGateReconcile(t *testing.T) {
	const uid = types.UID("p")
	const gate = v1.PodConditionType("example.com/lb")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := newFakeRuntime()
	rt.setStatus(uid, runningStatus(uid, container.ContainerStateRunning))
	pm := podmanager.New()
	k := New(Options{}, source.NewPodConfig(), pm, rt, &fakeCRI{})
	// No periodic resync within the test: only the reconcile can sync.
	k.workers = worker.New(ctx, k, time.Hour, time.Hour, nil)

	pod := cachePod(uid)
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: gate}}
	k.HandlePodAdditions(ctx, []*v1.Pod{pod})
	ready := func() *v1.PodCondition {
		s, _ := pm.GetPodStatus(uid)
		return condition(s, v1.PodReady)
	}
	waitFor(t, "Ready False for the missing gate", func() bool {
		c := ready()
		return c != nil && c.Status == v1.ConditionFalse && c.Reason == "ReadinessGatesNotReady"
	})

	for _, step := range []struct {
		gateStatus v1.ConditionStatus
		wantReady  v1.ConditionStatus
	}{
		{gateStatus: v1.ConditionTrue, wantReady: v1.ConditionTrue},
		{gateStatus: v1.ConditionFalse, wantReady: v1.ConditionFalse},
	} {
		// What the source now holds: the status sync published, plus the
		// gate's condition someone else set.
		reconciled := pod.DeepCopy()
		reconciled.Status, _ = pm.GetPodStatus(uid)
		if c := condition(reconciled.Status, gate); c != nil {
			c.Status = step.gateStatus
		} else {
			reconciled.Status.Conditions = append(reconciled.Status.Conditions, v1.PodCondition{Type: gate, Status: step.gateStatus})
		}
		k.HandlePodReconcile(ctx, []*v1.Pod{reconciled})
		waitFor(t, "Ready "+string(step.wantReady)+" after the gate turned "+string(step.gateStatus), func() bool {
			c := ready()
			return c != nil && c.Status == step.wantReady
		})
	}
}
