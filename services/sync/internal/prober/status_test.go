package prober

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/status"
)

// TestReadinessDrivesConditions feeds the Manager's results to the status
// generator: the container's ready field and the pod's ContainersReady and
// Ready conditions follow the readiness result, and a startup probe
// without a success keeps the container not started.
func TestReadinessDrivesConditions(t *testing.T) {
	id := container.BuildContainerID("containerd", "c1")
	tests := []struct {
		desc        string
		startup     *kuberuntime.ProbeResult
		readiness   *kuberuntime.ProbeResult
		wantStarted bool
		wantReady   v1.ConditionStatus
	}{
		{desc: "no results yet", wantReady: v1.ConditionFalse},
		{desc: "started, readiness not yet", startup: ptr(ok), wantStarted: true, wantReady: v1.ConditionFalse},
		{desc: "started and ready", startup: ptr(ok), readiness: ptr(ok), wantStarted: true, wantReady: v1.ConditionTrue},
		{desc: "started, readiness failed", startup: ptr(ok), readiness: ptr(fail), wantStarted: true, wantReady: v1.ConditionFalse},
		{desc: "startup failed", startup: ptr(fail), readiness: ptr(ok), wantReady: v1.ConditionFalse},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m := newTestManager(ctx, newFakeStatus(), &fakeExecer{}, nil, time.Millisecond)
			drain(ctx, m)
			c := v1.Container{Name: "app", Image: "img", StartupProbe: execProbe(nil), ReadinessProbe: execProbe(nil)}
			pod := testPod(c)
			// The pod's probe workers, registered but not running (AddPod
			// would start them probing).
			for _, pt := range []probeType{startup, readiness} {
				m.workers[probeKey{pod.UID, c.Name, pt}] = newWorker(m, pt, pod, c)
			}
			if tc.startup != nil {
				m.startup.Set(id, *tc.startup, pod.UID)
			}
			if tc.readiness != nil {
				m.readiness.Set(id, *tc.readiness, pod.UID)
			}
			now := time.Now()
			ps := &container.PodStatus{
				ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, IPs: []string{"10.0.0.5"},
				SandboxStatuses: []*runtimeapi.PodSandboxStatus{{
					Id: "s1", State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: now.UnixNano(),
					Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.5"},
				}},
				ContainerStatuses: []*container.Status{{
					ID: id, Name: "app", State: container.ContainerStateRunning, CreatedAt: now, StartedAt: now, Image: "img",
				}},
			}
			s := status.GenerateAPIPodStatus(pod, ps, status.Inputs{Probes: m})
			cs := s.ContainerStatuses[0]
			if cs.Started == nil || *cs.Started != tc.wantStarted || cs.Ready != (tc.wantReady == v1.ConditionTrue) {
				t.Errorf("container started=%v ready=%v, want started=%v ready=%v", deref(cs.Started), cs.Ready, tc.wantStarted, tc.wantReady)
			}
			for _, ct := range []v1.PodConditionType{v1.ContainersReady, v1.PodReady} {
				var got v1.ConditionStatus
				for _, c := range s.Conditions {
					if c.Type == ct {
						got = c.Status
					}
				}
				if got != tc.wantReady {
					t.Errorf("%s = %q, want %q", ct, got, tc.wantReady)
				}
			}
		})
	}
}
