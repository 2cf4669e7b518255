// Package kubelet_test joins a real kubelet (v1.36.3, built by
// hack/lib/kube.sh) to the control plane of package cluster, as the
// conformance harness does to compare the kubelet with splitlet: the Node
// registers with the node's own identity and turns Ready, a pod bound to it
// runs on containerd with a pod-network IP, its log is read through the API
// server (pods/log: the API server's kubelet-client certificate against the
// kubelet's client CA, the kubelet's serving certificate against the
// cluster CA, the kubelet's webhook authorization), and deleting it stops
// its containers in containerd.
//
// `hack/kubelet-e2e.sh` provides what it needs and runs it inside a network
// namespace of its own:
//
//	SPLITLET_KUBE_BIN_DIR          kube-apiserver, kube-controller-manager, kube-scheduler, kubelet
//	SPLITLET_CONTAINERD_ENDPOINTS  the containerd CRI endpoint (the first one is used)
//	SPLITLET_NODE_IP               a non-loopback address on an interface of the namespace
//	SPLITLET_BUSYBOX_IMAGE         the busybox image imported into containerd
//
// Without the first three the test skips.
package kubelet_test

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/cluster"
	"github.com/splitlet/splitlet/internal/kubeletnode"
	"github.com/splitlet/splitlet/internal/stack"
	"github.com/splitlet/splitlet/services/sync/test/kubetest"
)

const (
	kubeBinEnv    = "SPLITLET_KUBE_BIN_DIR"
	containerdEnv = "SPLITLET_CONTAINERD_ENDPOINTS"
	nodeIPEnv     = "SPLITLET_NODE_IP"
	busyboxEnv    = "SPLITLET_BUSYBOX_IMAGE"
	nodeName      = "kubelet-a"
)

func TestKubeletNode(t *testing.T) {
	kubeBin, endpoint, nodeIP := os.Getenv(kubeBinEnv), strings.Split(os.Getenv(containerdEnv), ",")[0], os.Getenv(nodeIPEnv)
	if kubeBin == "" || endpoint == "" || nodeIP == "" {
		t.Skipf("%s, %s and %s are unset: run hack/kubelet-e2e.sh (root), which builds the control plane and the kubelet, starts containerd with CNI and runs this test in a network namespace", kubeBinEnv, containerdEnv, nodeIPEnv)
	}
	busybox := os.Getenv(busyboxEnv)
	if busybox == "" {
		busybox = "docker.io/library/busybox:1.36"
	}
	ctx := t.Context()
	// Not t.TempDir: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "skl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })

	began := time.Now()
	c, err := cluster.Start(ctx, cluster.Config{BinDir: kubeBin, Dir: filepath.Join(dir, "cp")})
	if err != nil {
		t.Fatalf("start the control plane: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.Processes() {
				t.Logf("last lines of %s:\n%s", p.LogPath, p.Tail(20))
			}
		}
		c.Stop()
	})
	t.Logf("control plane ready in %v at %s", time.Since(began).Round(time.Millisecond), c.Server)
	client := kubetest.Client(t, c.AdminKubeconfig)

	kubeconfig, err := c.NodeKubeconfig(nodeName)
	if err != nil {
		t.Fatal(err)
	}
	crt, key, err := c.NodeServingCert(nodeName, []net.IP{net.ParseIP(nodeIP)})
	if err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	n, err := kubeletnode.Start(ctx, kubeletnode.Config{
		KubeletBin:      filepath.Join(kubeBin, "kubelet"),
		Dir:             filepath.Join(dir, nodeName),
		NodeName:        nodeName,
		NodeIP:          nodeIP,
		Kubeconfig:      kubeconfig,
		RuntimeEndpoint: endpoint,
		ClientCAFile:    c.CAFile,
		TLSCertFile:     crt,
		TLSKeyFile:      key,
	})
	if err != nil {
		t.Fatalf("start the kubelet: %v", err)
	}
	healthy := time.Since(began)
	// Registered last, so it runs first: the kubelet stops before the
	// control plane, and its log is printed on failure.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", n.LogPath(), n.Process.Tail(60))
		}
		if err := n.Stop(); err != nil {
			t.Errorf("stop the kubelet: %v", err)
		}
	})

	kubetest.WaitNodeReady(t, client, nodeName, 2*time.Minute)
	t.Logf("kubelet healthy in %v, Node Ready in %v", healthy.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := int(node.Status.DaemonEndpoints.KubeletEndpoint.Port); got != n.Port {
		t.Errorf("Node reports kubelet port %d, want %d", got, n.Port)
	}
	t.Logf("Node %s: kubelet %s, addresses %v, pod CIDR %q", nodeName, node.Status.NodeInfo.KubeletVersion, node.Status.Addresses, node.Spec.PodCIDR)

	const greeting = "hello from a real kubelet"
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:                      nodeName,
			TerminationGracePeriodSeconds: new(int64(5)),
			Containers: []v1.Container{{
				Name:            "app",
				Image:           busybox,
				ImagePullPolicy: v1.PullIfNotPresent,
				Command:         []string{"sh", "-c", "echo " + greeting + "; trap 'exit 0' TERM; while true; do sleep 1; done"},
			}},
		},
	}
	began = time.Now()
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running *v1.Pod
	stack.WaitFor(t, 2*time.Minute, "pod hello Running with an IP", func() (bool, string) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		running = p
		return p.Status.Phase == v1.PodRunning && p.Status.PodIP != "", fmt.Sprintf("phase %s, IP %q, %v", p.Status.Phase, p.Status.PodIP, p.Status.ContainerStatuses)
	})
	t.Logf("pod Running in %v with IP %s", time.Since(began).Round(time.Millisecond), running.Status.PodIP)

	// pods/log: API server -> kubelet over HTTPS on the Node's InternalIP.
	var logs string
	stack.WaitFor(t, 30*time.Second, "the pod's log through the API server", func() (bool, string) {
		raw, err := client.CoreV1().Pods("default").GetLogs("hello", &v1.PodLogOptions{Container: "app"}).DoRaw(ctx)
		if err != nil {
			return false, err.Error()
		}
		logs = string(raw)
		return strings.Contains(logs, greeting), fmt.Sprintf("log %q", logs)
	})
	t.Logf("pods/log: %q", strings.TrimSpace(logs))

	began = time.Now()
	if err := client.CoreV1().Pods("default").Delete(ctx, "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stack.WaitFor(t, time.Minute, "pod hello gone from the API server", func() (bool, string) {
		_, err := client.CoreV1().Pods("default").Get(ctx, "hello", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("get: %v", err)
	})
	// The kubelet stops the pod's containers and sandbox before it lets the
	// API server forget the pod; removing them is its container GC's, once
	// a minute (ContainerGCPeriod).
	runtime := kubetest.CRI(t, endpoint)
	label := map[string]string{"io.kubernetes.pod.name": "hello"}
	cs, err := runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: label}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Containers {
		if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			t.Errorf("container %s of the deleted pod is %s", c.Metadata.GetName(), c.State)
		}
	}
	ss, err := runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: label}})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range ss.Items {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			t.Errorf("sandbox %s of the deleted pod is %s", sb.Metadata.GetName(), sb.State)
		}
	}
	t.Logf("deleted: pod gone, its containers and sandbox stopped in %v", time.Since(began).Round(time.Millisecond))
}
