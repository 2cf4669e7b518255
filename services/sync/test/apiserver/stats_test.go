package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// nodeIPEnv is a non-loopback address of this machine the node API can
// listen on: the API server's nodes/proxy refuses loopback addresses.
// hack/apiserver-e2e.sh puts 192.0.2.10 on lo in its namespace (and
// hack/apiserver.sh's node-api.crt names it).
const nodeIPEnv = "SPLITLET_NODE_IP"

// TestStatsThroughAPIServer: `kubectl get --raw
// /api/v1/nodes/<node>/proxy/stats/summary` and .../metrics/resource, as
// metrics-server and `kubectl top` read them, reach sync's node API through
// the API server and report the running pod, its container's memory working
// set above zero, on containerd when SPLITLET_CONTAINERD_ENDPOINT is set,
// else on the fake runtime.
func TestStatsThroughAPIServer(t *testing.T) {
	pki, ip := os.Getenv(pkiEnv), os.Getenv(nodeIPEnv)
	if pki == "" || ip == "" {
		t.Skipf("needs %s (hack/apiserver.sh env) and %s (a non-loopback address of this machine, which hack/apiserver-e2e.sh sets up): "+
			"the API server does not proxy nodes/proxy to loopback", pkiEnv, nodeIPEnv)
	}
	admin, _ := kubeClient(t)
	ctx := t.Context()
	endpoint := os.Getenv(containerdEnv)
	_, _, node, _ := nodeAPIStackAt(t, pki, endpoint, ip)
	pod := runStatsPod(t, admin, node, endpoint != "")
	ns := pod.Namespace

	proxy := func(path string) ([]byte, error) {
		return admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", path).DoRaw(ctx)
	}
	// The runtime's stats may trail the container's start by a sample.
	var summary statsapi.Summary
	waitFor(t, 60*time.Second, "/stats/summary through the API server with the pod's working set", func() (bool, string) {
		raw, err := proxy("stats/summary")
		if err != nil {
			return false, err.Error()
		}
		summary = statsapi.Summary{}
		if err := json.Unmarshal(raw, &summary); err != nil {
			return false, err.Error()
		}
		for _, p := range summary.Pods {
			if p.PodRef.Name != pod.Name || p.PodRef.Namespace != ns {
				continue
			}
			for _, c := range p.Containers {
				if c.Name == "app" && c.Memory != nil && c.Memory.WorkingSetBytes != nil && *c.Memory.WorkingSetBytes > 0 {
					t.Logf("pod %s: container app working set %d bytes, CPU %v ns; pod working set %v bytes",
						pod.Name, *c.Memory.WorkingSetBytes, deref(c.CPU.UsageCoreNanoSeconds), deref(p.Memory.WorkingSetBytes))
					return true, ""
				}
			}
			return false, fmt.Sprintf("pod listed without a working set: %s", raw)
		}
		return false, fmt.Sprintf("pod not listed: %s", raw)
	})
	if n := summary.Node; n.NodeName != node || n.Memory == nil || n.Memory.WorkingSetBytes == nil || *n.Memory.WorkingSetBytes == 0 ||
		n.CPU == nil || n.CPU.UsageCoreNanoSeconds == nil || *n.CPU.UsageCoreNanoSeconds == 0 {
		t.Errorf("node stats %+v: want %s with its CPU and memory", n, node)
	} else {
		t.Logf("node %s: working set %d bytes, CPU %d ns", n.NodeName, *n.Memory.WorkingSetBytes, *n.CPU.UsageCoreNanoSeconds)
	}

	raw, err := proxy("metrics/resource")
	if err != nil {
		t.Fatalf("/metrics/resource through the API server: %v", err)
	}
	for _, want := range []string{
		"node_memory_working_set_bytes ",
		fmt.Sprintf(`container_memory_working_set_bytes{container="app",namespace="%s",pod="%s"} `, ns, pod.Name),
		fmt.Sprintf(`pod_cpu_usage_seconds_total{namespace="%s",pod="%s"} `, ns, pod.Name),
		"resource_scrape_error 0\n",
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("/metrics/resource has no %q:\n%s", want, raw)
		}
	}

	// The prober's counters, as a Prometheus scraping the kubelet's
	// /metrics/probes reads them.
	want := fmt.Sprintf(`prober_probe_total{container="app",namespace="%s",pod="%s",pod_uid="%s",probe_type="Readiness",result="successful"} `, ns, pod.Name, pod.UID)
	waitFor(t, 30*time.Second, "/metrics/probes counting the pod's readiness probe", func() (bool, string) {
		raw, err := proxy("metrics/probes")
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(string(raw), want), string(raw)
	})
	if endpoint == "" {
		return // the fake runtime's ExecSync runs nothing
	}
	// The kubelet's legacy /run: a command's output in one response.
	out, err := admin.CoreV1().RESTClient().Post().AbsPath("/api/v1/nodes", node, "proxy", "run", ns, pod.Name, "app").
		Param("cmd", "echo ran in app").DoRaw(ctx)
	if err != nil || string(out) != "ran in app\n" {
		t.Errorf("/run through the API server: %q, %v; want the command's output", out, err)
	}
}

// deref is *p, 0 for nil.
func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// runStatsPod runs a host-network pod with one container, app, on node and
// returns once it runs: on containerd (onContainerd) a shell looping on
// sleep, whose working set is a few hundred KiB; on the fake runtime a
// container that runs until stopped.
func runStatsPod(t *testing.T, admin kubernetes.Interface, node string, onContainerd bool) *v1.Pod {
	t.Helper()
	ctx := t.Context()
	// A probe, for /metrics/probes.
	ready := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1}
	container := v1.Container{Name: "app", Image: "busybox:1.36", ReadinessProbe: ready}
	if onContainerd {
		container = v1.Container{Name: "app", Image: busyboxImage(), ImagePullPolicy: v1.PullNever,
			Command: []string{"sh", "-c", "while true; do sleep 3600; done"}, ReadinessProbe: ready}
		t.Logf("on containerd at %s", os.Getenv(containerdEnv))
	} else {
		t.Logf("%s unset: on the fake runtime", containerdEnv)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stats-" + node, Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:                     node,
			HostNetwork:                  true,
			AutomountServiceAccountToken: new(false),
			Tolerations:                  []v1.Toleration{{Key: "splitlet.dev/agent", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
			Containers:                   []v1.Container{container},
		},
	}
	created, err := admin.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.UID = created.UID
	t.Cleanup(func() {
		zero := int64(0)
		_ = admin.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	waitFor(t, 90*time.Second, "the pod Running", func() (bool, string) {
		p, err := admin.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		return p.Status.Phase == v1.PodRunning && running, fmt.Sprintf("phase %q", p.Status.Phase)
	})
	return pod
}
