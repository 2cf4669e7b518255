// Package daemonset_test applies splitlet's DaemonSet (deploy/daemonset),
// unchanged but for host paths and the API server's address, to a cluster
// whose node is a real kubelet v1.36.3 on containerd: internal/cluster's
// control plane and internal/kubeletnode's kubelet. The kubelet runs
// splitlet's three images as the DaemonSet's pod; that pod's sync registers
// <node>-splitlet with its service account (deploy/daemonset/rbac.yaml) and
// runs a Deployment's pods on splitlet's own containerd, never the
// kubelet's.
//
// `make daemonset-e2e` (hack/daemonset-e2e.sh) provides what it needs and
// runs it inside a network namespace of its own:
//
//	SPLITLET_KUBE_BIN_DIR              kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet
//	SPLITLET_KUBELET_RUNTIME_ENDPOINT  the kubelet's containerd, holding splitlet's images
//	SPLITLET_RUNTIME_DIR               splitlet's containerd's directory (containerd.sock in it): the DaemonSet's runtime-socket hostPath
//	SPLITLET_E2E_DIR                   a directory for the cluster, the kubelet and splitlet's host paths
//	SPLITLET_DEPLOY_DIR                deploy/daemonset
//	SPLITLET_BUSYBOX_IMAGE             the busybox image in splitlet's containerd
//
// Without them the test skips.
package daemonset_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/cluster"
	"github.com/splitlet/splitlet/internal/kubeletnode"
	"github.com/splitlet/splitlet/internal/nodelabels"
	launcher "github.com/splitlet/splitlet/internal/stack"
	"github.com/splitlet/splitlet/services/sync/test/kubetest"
)

// nodeIP is the kubelet's address; hack/daemonset-e2e.sh puts it on lo.
var nodeIP = net.IPv4(192, 0, 2, 10)

type env struct {
	kubeBin, kubeletEndpoint, runtimeDir, dir, deployDir, busybox string
}

func needEnv(t *testing.T) env {
	t.Helper()
	e := env{
		kubeBin: os.Getenv("SPLITLET_KUBE_BIN_DIR"), kubeletEndpoint: os.Getenv("SPLITLET_KUBELET_RUNTIME_ENDPOINT"),
		runtimeDir: os.Getenv("SPLITLET_RUNTIME_DIR"), dir: os.Getenv("SPLITLET_E2E_DIR"),
		deployDir: os.Getenv("SPLITLET_DEPLOY_DIR"), busybox: os.Getenv("SPLITLET_BUSYBOX_IMAGE"),
	}
	if e.kubeBin == "" || e.kubeletEndpoint == "" || e.runtimeDir == "" || e.dir == "" || e.deployDir == "" {
		t.Skip("SPLITLET_KUBE_BIN_DIR, SPLITLET_KUBELET_RUNTIME_ENDPOINT, SPLITLET_RUNTIME_DIR, SPLITLET_E2E_DIR and SPLITLET_DEPLOY_DIR are unset: " +
			"run make daemonset-e2e (root), which builds the control plane, the kubelet and splitlet's images, starts both containerds and runs this test in a network namespace")
	}
	if e.busybox == "" {
		e.busybox = "docker.io/library/busybox:1.36"
	}
	return e
}

func TestDaemonSetOnAKubeletNode(t *testing.T) {
	e := needEnv(t)
	ctx := t.Context()
	c, err := cluster.Start(ctx, cluster.Config{BinDir: e.kubeBin, Dir: filepath.Join(e.dir, "cp")})
	if err != nil {
		t.Fatalf("start the control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.Processes() {
				t.Logf("last lines of %s:\n%s", p.LogPath, p.Tail(15))
			}
		}
		c.Stop()
	})
	client := kubetest.Client(t, c.AdminKubeconfig)

	// The kubelet node, as conformance's (internal/conformance).
	const kubeletName = "worker-1"
	kubeconfig, err := c.NodeKubeconfig(kubeletName)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := c.NodeServingCert(kubeletName, []net.IP{nodeIP})
	if err != nil {
		t.Fatal(err)
	}
	kl, err := kubeletnode.Start(ctx, kubeletnode.Config{
		KubeletBin: filepath.Join(e.kubeBin, "kubelet"), Dir: filepath.Join(e.dir, "kubelet"),
		NodeName: kubeletName, NodeIP: nodeIP.String(), Kubeconfig: kubeconfig,
		RuntimeEndpoint: e.kubeletEndpoint, ClientCAFile: c.CAFile,
		TLSCertFile: certFile, TLSKeyFile: keyFile, Port: 10250,
	})
	if err != nil {
		t.Fatalf("start the kubelet: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of the kubelet's log:\n%s", kl.Process.Tail(20))
		}
		if err := kl.Stop(); err != nil {
			t.Logf("stop the kubelet: %v", err)
		}
	})
	kubetest.WaitNodeReady(t, client, kubeletName, 90*time.Second)

	began := time.Now()
	kubectl(t, e, c, manifests(t, e, c), "apply", "-f", "-")
	kubectl(t, e, c, "", "label", "node", kubeletName, "splitlet.dev/enabled=true")
	t.Cleanup(func() {
		if t.Failed() {
			for _, container := range []string{"gateway", "admission", "sync"} {
				out, _ := exec.Command(filepath.Join(e.kubeBin, cluster.KubectlBinary), "--kubeconfig="+c.AdminKubeconfig,
					"-n", "splitlet-system", "logs", "daemonset/splitlet", "-c", container, "--tail=25").CombinedOutput()
				t.Logf("%s's log:\n%s", container, out)
			}
		}
	})
	kubectl(t, e, c, "", "-n", "splitlet-system", "rollout", "status", "daemonset/splitlet", "--timeout=120s")
	splitletNode := kubeletName + "-splitlet"
	kubetest.WaitNodeReady(t, client, splitletNode, 90*time.Second)
	t.Logf("the DaemonSet's pod runs on %s and %s is Ready %v after kubectl apply", kubeletName, splitletNode, time.Since(began).Round(time.Millisecond))

	began = time.Now()
	kubectl(t, e, c, deployment(e.busybox), "apply", "-f", "-")
	kubectl(t, e, c, "", "rollout", "status", "deployment/hello", "--timeout=120s")
	t.Logf("2 replicas Ready on %s in %v", splitletNode, time.Since(began).Round(time.Millisecond))
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=hello"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != splitletNode || p.Status.PodIP == "" {
			t.Errorf("pod %s on %q with IP %q, want on %s with a pod IP", p.Name, p.Spec.NodeName, p.Status.PodIP, splitletNode)
		}
	}

	splitletRuntime := kubetest.CRI(t, "unix://"+filepath.Join(e.runtimeDir, "containerd.sock"))
	kubeletRuntime := kubetest.CRI(t, e.kubeletEndpoint)
	if got := running(t, splitletRuntime, "default"); got != 2 {
		t.Errorf("splitlet's containerd runs %d containers of namespace default, want the 2 replicas", got)
	}
	if got := running(t, kubeletRuntime, "default"); got != 0 {
		t.Errorf("the kubelet's containerd runs %d containers of namespace default, want none: they are splitlet's", got)
	}
	if got := running(t, kubeletRuntime, "splitlet-system"); got != 3 {
		t.Errorf("the kubelet's containerd runs %d containers of splitlet-system, want the DaemonSet pod's 3", got)
	}

	kubectl(t, e, c, "", "delete", "deployment", "hello", "--wait=true")
	launcher.WaitFor(t, 60*time.Second, "no container of the Deployment left in splitlet's containerd", func() (bool, string) {
		n := count(t, splitletRuntime, "default")
		return n == 0, fmt.Sprintf("%d containers or sandboxes", n)
	})

	// Uninstalling: the kubelet stops the DaemonSet's pod (sync, admission
	// and the gateway end on SIGTERM) and nothing of it is left running.
	kubectl(t, e, c, "", "-n", "splitlet-system", "delete", "daemonset", "splitlet", "--cascade=foreground", "--wait=true")
	launcher.WaitFor(t, 60*time.Second, "no container of the DaemonSet left running in the kubelet's containerd", func() (bool, string) {
		n := running(t, kubeletRuntime, "splitlet-system")
		return n == 0, fmt.Sprintf("%d running", n)
	})
}

// manifests are deploy/daemonset's files as an operator applies them,
// with the host paths moved to the test's own directories (so that no
// other splitlet's is touched) and the kubeconfig's server set to this cluster's
// API server (no kube-proxy or DNS serves kubernetes.default.svc here).
func manifests(t *testing.T, e env, c *cluster.Cluster) string {
	t.Helper()
	// sync's state stays under /var/lib/splitlet, the only host path the
	// gateway's default policy lets containers mount (sync's pod
	// directories: etc-hosts, volumes).
	if err := os.MkdirAll("/var/lib/splitlet", 0o755); err != nil {
		t.Fatal(err)
	}
	state := kubetest.TempDir(t, "/var/lib/splitlet", "daemonset-e2e-")
	replace := strings.NewReplacer(
		"/run/splitlet-containerd", e.runtimeDir,
		"/var/lib/splitlet/sync", state,
		"/var/log/splitlet-pods", filepath.Join(e.dir, "splitlet-pod-logs"),
		"https://kubernetes.default.svc", c.Server,
		// The test nodes' eviction thresholds and no image garbage
		// collection, as every test node's (launcher.EvictionHard): the
		// machine's disk is shared with builds and other tests.
		"    node:\n", "    eviction:\n    "+launcher.EvictionHardYAML()+"    node:\n",
		"            - --state-dir=/var/lib/splitlet/sync\n", "            - --state-dir="+state+"\n            - --image-gc-high-threshold=100\n",
	)
	var docs []string
	for _, f := range []string{"namespace.yaml", "rbac.yaml", "configmap.yaml", "kubeconfig-configmap.yaml", "daemonset.yaml"} {
		raw, err := os.ReadFile(filepath.Join(e.deployDir, f))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, replace.Replace(string(raw)))
	}
	return strings.Join(docs, "\n---\n")
}

// deployment is example-pod.yaml's kind of pod as a Deployment of two:
// it selects splitlet's Node and tolerates its taint.
func deployment(image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: hello, namespace: default}
spec:
  replicas: 2
  selector:
    matchLabels: {app: hello}
  template:
    metadata:
      labels: {app: hello}
    spec:
      nodeSelector: {%s: %s}
      tolerations:
      - {key: %s, operator: Exists, effect: NoSchedule}
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 2
      containers:
      - name: hello
        image: %s
        imagePullPolicy: IfNotPresent
        command: [sh, -c, "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, nodelabels.AgentLabel, nodelabels.AgentLabelValue, nodelabels.AgentLabel, image)
}

// kubectl runs the built kubectl as the cluster's admin, as a user would.
func kubectl(t *testing.T, e env, c *cluster.Cluster, stdin string, args ...string) string {
	t.Helper()
	return kubetest.Kubectl(t, filepath.Join(e.kubeBin, cluster.KubectlBinary), c.AdminKubeconfig, stdin, args...)
}

// running counts the running containers of pods in namespace.
func running(t *testing.T, rt runtimeapi.RuntimeServiceClient, namespace string) int {
	t.Helper()
	resp, err := rt.ListContainers(t.Context(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.pod.namespace": namespace}}})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.Containers)
}

// count is the containers and sandboxes of pods in namespace, in any state.
func count(t *testing.T, rt runtimeapi.RuntimeServiceClient, namespace string) int {
	t.Helper()
	label := map[string]string{"io.kubernetes.pod.namespace": namespace}
	cs, err := rt.ListContainers(t.Context(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: label}})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := rt.ListPodSandbox(t.Context(), &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: label}})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs.Containers) + len(ss.Items)
}
