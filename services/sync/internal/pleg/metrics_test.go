package pleg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// The running gauges are listed again at scrape time when a container
// event came after they were set (the relist that sets them runs every few
// minutes while events flow), and not otherwise.
func TestRunningGaugesRefreshAfterEvents(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	labels := map[string]string{kuberuntime.KubernetesPodUIDLabel: "u1"}
	running := []*runtimeapi.Container{{Id: "c1", Labels: labels, State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
	sandboxes := []*runtimeapi.PodSandbox{
		{Id: "s1", Labels: labels, State: runtimeapi.PodSandboxState_SANDBOX_READY},
		{Id: "not-a-pod", State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}
	refreshes := 0
	m.setRefresh(func() {
		refreshes++
		m.setRunning(sandboxes, running)
	})
	m.setRunning(sandboxes, nil)

	if got := testutil.ToFloat64(m.RunningPods); got != 1 {
		t.Fatalf("running pods = %v, want 1 (a sandbox without a pod UID label is not a pod)", got)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if refreshes != 0 {
		t.Fatalf("fresh gauges were listed again %d times", refreshes)
	}
	m.runtimeChanged()
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if refreshes != 1 {
		t.Fatalf("after an event a scrape listed %d times, want 1", refreshes)
	}
	if got := testutil.ToFloat64(m.RunningContainers.WithLabelValues("running")); got != 1 {
		t.Errorf("running containers after the refresh = %v, want 1", got)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if refreshes != 1 {
		t.Errorf("a second scrape listed again (%d lists) though nothing changed", refreshes)
	}
}
