// Package apiserver_test runs splitlet-gateway (fake backend) and
// splitlet-sync against a real kube-apiserver: the node registers and stays
// Ready, a pod bound to it runs and its status reaches the API server,
// deleting it terminates it and removes the object, and restarting sync
// restarts no container.
//
// It needs a running API server: hack/apiserver.sh start, then
//
//	eval "$(hack/apiserver.sh env)"   # SPLITLET_KUBECONFIG=_out/apiserver/kubeconfig
//	cd services/sync && go test ./test/apiserver/ -v
//
// Without SPLITLET_KUBECONFIG every test skips. The streaming test
// (streams_test.go: kubectl exec and port-forward) also needs a containerd,
// since the fake backend serves no streams, and kubectl; it skips without
// SPLITLET_CONTAINERD_ENDPOINT and SPLITLET_KUBE_BIN_DIR.
package apiserver_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	launcher "github.com/splitlet/splitlet/internal/stack"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	kubeconfigEnv = "SPLITLET_KUBECONFIG"
	// nodeKubeconfigEnv, when set, is the credential sync runs with instead
	// of the admin's: the test binds deploy/daemonset/rbac.yaml's roles to
	// its user (nodeUserEnv), so the run proves those rules suffice.
	nodeKubeconfigEnv = "SPLITLET_NODE_KUBECONFIG"
	nodeUserEnv       = "SPLITLET_NODE_USER"
)

var binDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv(kubeconfigEnv) == "" {
		// Tests skip with the reason; nothing to build.
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "splitlet-apiserver-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if _, err := launcher.Build(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir = dir
	return m.Run()
}

func kubeClient(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	path := os.Getenv(kubeconfigEnv)
	if path == "" {
		t.Skip(kubeconfigEnv + " is unset: start an API server with hack/apiserver.sh start and eval \"$(hack/apiserver.sh env)\"")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c, path
}

// waitFor polls cond until it holds or timeout passes.
var waitFor = launcher.WaitFor

type stack struct {
	*launcher.Stack
	t   *testing.T
	cri runtimeapi.RuntimeServiceClient
}

// startStack starts the gateway (the fake backend, or the `cri` backend in
// front of runtimeEndpoint when it is set), admission and sync with the
// project's launcher; sync registers node with the API server of kubeconfig.
// syncArgs are added to sync's flags.
func startStack(t *testing.T, kubeconfig, node, runtimeEndpoint string, syncArgs ...string) *stack {
	t.Helper()
	// Not t.TempDir: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "sapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// Admission reports the node's resources (GetNode); its pod capacity is
	// set apart from the machine fallback's 110 so the test can tell where
	// the Node's capacity came from. Sync starts after admission is healthy,
	// or the first Node would carry no capacity.
	st, err := launcher.Start(context.Background(), launcher.Config{
		BinDir:          binDir,
		Dir:             dir,
		NodeName:        node,
		RuntimeEndpoint: runtimeEndpoint,
		// The node allows what a kubelet allows: any host path, and any
		// capability (kubectl debug's general profile adds SYS_PTRACE).
		GatewayArgs: []string{"--allowed-host-path=/", "--allowed-capability=*", "--log-level=warn", "--profiling"},
		// Profiles of the gateway and sync tell where a stream stalled
		// (dumpStreams).
		GatewayMetricsAddr: "127.0.0.1:0",
		AdmissionConfig:    fmt.Sprintf("node:\n  maxPods: %d\neviction:\n%s", admissionMaxPods, launcher.EvictionHardYAML()),
		AdmissionArgs:      []string{"--log-level=warn"},
		SyncArgs: append([]string{
			"--kubeconfig=" + kubeconfig,
			"--admission-failure-policy=Ignore",
			"--resync-interval=500ms",
			"--relist-interval=200ms",
			"--log-level=debug",
			"--profiling",
		}, syncArgs...),
		StopGrace: 10 * time.Second,
	})
	if err != nil {
		t.Fatalf("start the stack: %v", err)
	}
	t.Cleanup(func() {
		st.Stop()
		if t.Failed() {
			for _, p := range st.Processes() {
				t.Logf("last lines of %s:\n%s", p.LogPath, p.Tail(60))
			}
		}
	})
	return &stack{Stack: st, t: t, cri: st.CRI()}
}

// admissionMaxPods is the pod capacity admission reports for the node.
const admissionMaxPods = 42

// containerIDs lists the runtime's running containers.
func (s *stack) containerIDs() map[string]bool {
	s.t.Helper()
	resp, err := s.cri.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}},
	})
	if err != nil {
		s.t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, c := range resp.Containers {
		ids[c.Id] = true
	}
	return ids
}

// nodeStack starts a stack whose sync registers a fresh node with the API
// server, running as the node identity under deploy/daemonset/rbac.yaml
// when the environment names one, and prepares the default namespace as
// the controllers of a full control plane would. syncArgs are added to
// sync's flags.
func nodeStack(t *testing.T, syncArgs ...string) (kubernetes.Interface, *stack, string) {
	t.Helper()
	return nodeStackOn(t, "", syncArgs...)
}

// nodeStackOn is nodeStack with the gateway in front of the CRI runtime at
// runtimeEndpoint ("" is the fake backend).
func nodeStackOn(t *testing.T, runtimeEndpoint string, syncArgs ...string) (kubernetes.Interface, *stack, string) {
	t.Helper()
	client, kubeconfig := kubeClient(t)
	node := fmt.Sprintf("splitlet-it-%d", time.Now().UnixNano()%1_000_000)
	if nk := os.Getenv(nodeKubeconfigEnv); nk != "" {
		user := os.Getenv(nodeUserEnv)
		if user == "" {
			user = "system:node:splitlet-node"
		}
		bindDeployRBAC(t, client, user)
		kubeconfig = nk
		t.Logf("sync runs as %s with deploy/daemonset/rbac.yaml's rules", user)
	} else {
		t.Logf("%s unset: sync runs with the admin credential; deploy/daemonset/rbac.yaml is not exercised", nodeKubeconfigEnv)
	}
	t.Cleanup(func() {
		// No garbage collector runs beside a bare API server: the Lease
		// the Node owns is deleted by hand.
		_ = client.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{})
		_ = client.CoordinationV1().Leases("kube-node-lease").Delete(context.Background(), node, metav1.DeleteOptions{})
	})
	serviceAccountBasics(t, client, "default")
	return client, startStack(t, kubeconfig, node, runtimeEndpoint, syncArgs...), node
}

// serviceAccountBasics creates what kube-controller-manager would in a
// namespace and this bare API server lacks: the default ServiceAccount
// (the ServiceAccount admission plugin refuses pods without it) and the
// kube-root-ca.crt ConfigMap its kube-api-access volume projects.
func serviceAccountBasics(t *testing.T, client kubernetes.Interface, ns string) {
	t.Helper()
	ctx := t.Context()
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ca := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: ns},
		Data: map[string]string{"ca.crt": "-----BEGIN CERTIFICATE-----\nstand-in for the cluster CA\n-----END CERTIFICATE-----\n"}}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, ca, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func TestPodLifecycleOnRealAPIServer(t *testing.T) {
	client, s, node := nodeStack(t)
	ctx := t.Context()

	nodeReady := func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionTrue, string(c.Status) + " " + c.Reason
			}
		}
		return false, "no Ready condition"
	}
	waitFor(t, 30*time.Second, "node registered and Ready", nodeReady)
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Status.Capacity[v1.ResourcePods]; got.Value() != admissionMaxPods {
		t.Errorf("node pod capacity %s, want admission's %d", got.String(), admissionMaxPods)
	}
	pressure := map[v1.NodeConditionType]v1.ConditionStatus{}
	for _, c := range n.Status.Conditions {
		pressure[c.Type] = c.Status
	}
	for _, ct := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if _, ok := pressure[ct]; !ok {
			t.Errorf("node conditions %v: admission's %s missing", pressure, ct)
		}
	}
	hasTaint := false
	for _, taint := range n.Spec.Taints {
		hasTaint = hasTaint || (taint.Key == "splitlet.dev/agent" && taint.Effect == v1.TaintEffectNoSchedule)
	}
	if !hasTaint || n.Labels["kubernetes.io/hostname"] != node {
		t.Errorf("node taints %v labels %v: want splitlet's taint and hostname label", n.Spec.Taints, n.Labels)
	}
	waitFor(t, 30*time.Second, "node lease", func() (bool, string) {
		l, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime != nil, "no renew time"
	})
	// The events a kubelet records about its node as it starts and
	// registers (kubectl describe node shows them).
	waitFor(t, 30*time.Second, "node events", func() (bool, string) {
		evs, err := client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + node})
		if err != nil {
			return false, err.Error()
		}
		var reasons []string
		for _, ev := range evs.Items {
			reasons = append(reasons, ev.Reason)
		}
		for _, want := range []string{"Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"} {
			if !slices.Contains(reasons, want) {
				return false, fmt.Sprintf("reasons %v, no %s", reasons, want)
			}
		}
		return true, ""
	})

	ns := "default"
	grace := int64(2)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + node, Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			Tolerations:                   []v1.Toleration{{Key: "splitlet.dev/agent", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
			Containers:                    []v1.Container{{Name: "app", Image: "busybox:1.36"}, {Name: "side", Image: "busybox:1.36"}},
		},
	}
	created, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = client.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})

	waitFor(t, 60*time.Second, "pod Running with container statuses in the API server", func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Running != nil && c.ContainerID != "" {
				running++
			}
		}
		return p.Status.Phase == v1.PodRunning && running == 2,
			fmt.Sprintf("phase %q, %d of 2 containers running", p.Status.Phase, running)
	})

	waitFor(t, 30*time.Second, "Started events in the API server", func() (bool, string) {
		evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.uid=" + string(created.UID) + ",reason=Started",
		})
		if err != nil {
			return false, err.Error()
		}
		return len(evs.Items) == 2, fmt.Sprintf("%d Started events", len(evs.Items))
	})

	before := s.containerIDs()
	if len(before) != 2 {
		t.Fatalf("runtime runs %d containers, want 2", len(before))
	}
	s.Sync.Stop(10 * time.Second)
	if err := s.Sync.Restart(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// The restarted sync resyncs the pod several times: it had its chances
	// to (wrongly) act.
	s.WaitResyncs(t, 6, 60*time.Second)
	after := s.containerIDs()
	for id := range before {
		if !after[id] {
			t.Errorf("container %s no longer running after the sync restart (running now: %v)", id, after)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d containers after the sync restart, want %d", len(after), len(before))
	}
	waitFor(t, 30*time.Second, "node still Ready after the restart", nodeReady)

	if err := client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "pod object gone from the API server", func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		if p.UID != created.UID {
			return false, "replaced by another pod"
		}
		return false, fmt.Sprintf("still there, phase %q, deletionTimestamp %v", p.Status.Phase, p.DeletionTimestamp)
	})
	if ids := s.containerIDs(); len(ids) != 0 {
		t.Errorf("containers still running after deletion: %v", ids)
	}
	waitFor(t, 30*time.Second, "node still Ready at the end", nodeReady)
}
