package syncloop

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// SyncPod asks the runtime for an in-place restart exactly when the status
// it just generated carries AllContainersRestarting=True, as the kubelet's
// syncPod does: when a container's exit matched its RestartAllContainers
// rule and containers are left to remove; not once they are gone.
func TestSyncPodAsksForRestartAllFromTheStatus(t *testing.T) {
	ctx := context.Background()
	const uid = types.UID("p")
	pod := cachePod(uid)
	never := v1.ContainerRestartPolicyNever
	pod.Spec.Containers[0].RestartPolicy = &never
	pod.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	rt := newFakeRuntime()
	k, pm := newCacheKubelet(rt, &fakeCRI{})
	pm.AddPod(pod)

	for i, step := range []struct {
		desc      string
		running   bool
		exitCode  int
		removed   bool
		wantAsk   bool
		wantState v1.ConditionStatus
	}{
		{desc: "running", running: true, wantAsk: false, wantState: v1.ConditionFalse},
		{desc: "exit 42 matches the rule", exitCode: 42, wantAsk: true, wantState: v1.ConditionTrue},
		{desc: "containers removed", removed: true, wantAsk: false, wantState: v1.ConditionFalse},
	} {
		ps := runningStatus(uid, container.ContainerStateExited)
		ps.ContainerStatuses[0].ExitCode = step.exitCode
		switch {
		case step.running:
			ps = runningStatus(uid, container.ContainerStateRunning)
		case step.removed:
			ps.ContainerStatuses = nil
		}
		rt.setStatus(uid, ps)
		// The runtime changed: the next sync must read it.
		k.statuses.cache.Invalidate(uid, time.Now())
		if _, err := k.SyncPod(ctx, 0, pod); err != nil {
			t.Fatalf("%s: %v", step.desc, err)
		}
		if len(rt.restartAll) != i+1 {
			t.Fatalf("%s: %d runtime syncs, want %d", step.desc, len(rt.restartAll), i+1)
		}
		if got := rt.restartAll[len(rt.restartAll)-1]; got != step.wantAsk {
			t.Errorf("%s: restartAllContainers = %t, want %t", step.desc, got, step.wantAsk)
		}
		st, _ := pm.GetPodStatus(uid)
		if c := findPodCondition(st.Conditions, v1.AllContainersRestarting); c == nil || c.Status != step.wantState {
			t.Errorf("%s: AllContainersRestarting = %+v, want %s", step.desc, c, step.wantState)
		}
	}
}

func findPodCondition(cs []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}
