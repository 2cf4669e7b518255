package prober

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// Once the startup probe succeeds, the readiness probe runs at once, not a
// period later, and before sync has published the status that says the
// container started (the e2e spec "Probing container should be ready
// immediately after startupProbe succeeds"; the kubelet's sync after a
// startup result triggers the readiness worker through UpdatePodStatus).
func TestReadinessRunsOnceStartupSucceeds(t *testing.T) {
	for _, tc := range []struct {
		desc string
		// replies: the startup probe's, then the readiness probe's.
		replies       []execReply
		wantStartup   kuberuntime.ProbeResult
		wantTriggered bool
		wantReadiness kuberuntime.ProbeResult
		wantCalls     int
	}{
		{
			desc: "startup succeeded: readiness is triggered and probes", replies: []execReply{pass, pass},
			wantStartup: ok, wantTriggered: true, wantReadiness: ok, wantCalls: 2,
		},
		{
			desc: "startup failed: readiness is neither triggered nor run", replies: []execReply{failed},
			wantStartup: fail, wantReadiness: fail, wantCalls: 1,
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, ex := newFakeStatus(), &fakeExecer{script: tc.replies}
			m := newTestManager(ctx, st, ex, nil, time.Millisecond)
			drain(ctx, m)
			c := v1.Container{Name: "app", StartupProbe: execProbe(nil), ReadinessProbe: execProbe(nil)}
			pod := testPod(c)
			// The status sync last published: running, not started yet.
			st.set(pod.UID, runningStatus("app", "containerd://c1", time.Now(), false))
			ws := map[probeType]*worker{}
			for _, pt := range []probeType{startup, readiness} {
				ws[pt] = newWorker(m, pt, pod, c)
				m.workers[probeKey{pod.UID, c.Name, pt}] = ws[pt]
			}
			id := container.BuildContainerID("containerd", "c1")

			ws[readiness].doProbe() // waits for the startup probe
			if n := ex.callCount(); n != 0 {
				t.Fatalf("readiness probed %d times before startup", n)
			}
			ws[startup].doProbe()
			if r, _ := m.startup.Get(id); r != tc.wantStartup {
				t.Fatalf("startup result %v, want %v", r, tc.wantStartup)
			}
			if triggered := len(ws[readiness].manualTriggerCh) == 1; triggered != tc.wantTriggered {
				t.Errorf("readiness triggered = %v, want %v", triggered, tc.wantTriggered)
			}
			ws[readiness].doProbe() // what the trigger runs, with the status unchanged
			if r, _ := m.readiness.Get(id); r != tc.wantReadiness {
				t.Errorf("readiness result %v, want %v", r, tc.wantReadiness)
			}
			if n := ex.callCount(); n != tc.wantCalls {
				t.Errorf("%d probes, want %d", n, tc.wantCalls)
			}
		})
	}
}

// The same through running workers whose period is an hour: readiness
// reports success right after startup does, without waiting for a tick.
func TestRunningReadinessWorkerFollowsStartup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ex := newFakeStatus(), &fakeExecer{script: []execReply{pass}}
	m := newTestManager(ctx, st, ex, nil, time.Hour)
	// Started long ago: no random first delay.
	m.start = time.Now().Add(-2 * time.Hour)
	for _, rm := range []*ResultsManager{m.liveness, m.startup} {
		go func() {
			for {
				select {
				case <-rm.Updates():
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	c := v1.Container{Name: "app", StartupProbe: execProbe(nil), ReadinessProbe: execProbe(nil)}
	pod := testPod(c)
	st.set(pod.UID, runningStatus("app", "containerd://c1", time.Now(), false))
	m.AddPod(pod)

	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case u := <-m.readiness.Updates():
			if u.Result == ok {
				if r, _ := m.startup.Get(u.ContainerID); r != ok {
					t.Fatalf("ready before started (startup result %v)", r)
				}
				return
			}
		case <-timeout.C:
			t.Fatal("readiness did not succeed within 10s of startup; it waited for its one-hour period")
		}
	}
}
