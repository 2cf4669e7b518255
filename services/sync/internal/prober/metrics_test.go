package prober

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
)

// Each probe counts in prober_probe_total by type and result, successes
// also in prober_probe_duration_seconds (failures not: the kubelet's
// worker.doProbe), and a stopped worker's series go.
func TestProbeMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ex := newFakeStatus(), &fakeExecer{script: []execReply{pass, failed, failed}}
	reg := prometheus.NewRegistry()
	m := NewManager(ctx, Options{Status: st, Execer: ex, TimeUnit: time.Millisecond, Metrics: NewMetrics(reg)})
	drain(ctx, m)
	c := v1.Container{Name: "app", ReadinessProbe: execProbe(nil)}
	pod := testPod(c)
	st.set(pod.UID, runningStatus("app", "containerd://c1", time.Now(), true))
	w := newWorker(m, readiness, pod, c)
	for range 3 {
		if !w.doProbe() {
			t.Fatal("worker stopped")
		}
	}
	want := `
# HELP prober_probe_total Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{container="app",namespace="ns",pod="web",pod_uid="uid-1",probe_type="Readiness",result="failed"} 2
prober_probe_total{container="app",namespace="ns",pod="web",pod_uid="uid-1",probe_type="Readiness",result="successful"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "prober_probe_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.metrics.duration); n != 1 {
		t.Errorf("%d duration series, want 1", n)
	}
	m.metrics.forget(w)
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Errorf("%d series after the worker stopped (%v), want 0", n, err)
	}
}
