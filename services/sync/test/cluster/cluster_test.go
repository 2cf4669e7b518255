// Package cluster_test runs splitlet nodes in a real Kubernetes control
// plane: etcd, kube-apiserver with its default admission plugins
// (NodeRestriction, ServiceAccount) and the Node and RBAC authorizers,
// kube-controller-manager and kube-scheduler (internal/cluster). Each node
// is a gateway, admission and sync in front of its own containerd; sync
// runs with the node's own identity (system:node:NAME). kube-scheduler
// places a Deployment's pods on the nodes, they become Ready, and deleting
// the Deployment with kubectl leaves no container in any containerd.
//
// `make cluster-e2e` (hack/cluster-e2e.sh) provides what it needs and runs
// it inside a network namespace of its own:
//
//	SPLITLET_KUBE_BIN_DIR          kube-apiserver, kube-controller-manager, kube-scheduler, kubectl
//	SPLITLET_CONTAINERD_ENDPOINTS  one containerd CRI endpoint per node, comma-separated
//	SPLITLET_BIN_DIR               splitlet's binaries (built when unset)
//	SPLITLET_BUSYBOX_IMAGE         the busybox image imported into each containerd
//
// Without the first two every test skips.
package cluster_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/cluster"
	"github.com/splitlet/splitlet/internal/nodelabels"
	launcher "github.com/splitlet/splitlet/internal/stack"
	"github.com/splitlet/splitlet/services/sync/test/kubetest"
)

// runtimeVersionRE is a node's containerRuntimeVersion as the kubelet
// formats it from containerd 1.6 ("1.6.20~ds1") or 2.x ("v2.4.2"): the
// parsed version, "containerd://1.6.20" or "containerd://2.4.2".
var runtimeVersionRE = regexp.MustCompile(`^containerd://[0-9]+\.[0-9]+\.[0-9]+$`)

const (
	kubeBinEnv    = "SPLITLET_KUBE_BIN_DIR"
	containerdEnv = "SPLITLET_CONTAINERD_ENDPOINTS"
	busyboxEnv    = "SPLITLET_BUSYBOX_IMAGE"
)

var binDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv(kubeBinEnv) == "" || os.Getenv(containerdEnv) == "" {
		return m.Run() // tests skip, saying why
	}
	bin, cleanup, err := launcher.Binaries(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "splitlet binaries:", err)
		return 1
	}
	defer cleanup()
	binDir = bin
	return m.Run()
}

// env is what a test needs from the environment; it skips without it.
type env struct {
	kubeBin   string
	endpoints []string
	busybox   string
}

func needEnv(t *testing.T) env {
	t.Helper()
	e := env{kubeBin: os.Getenv(kubeBinEnv), busybox: os.Getenv(busyboxEnv)}
	for _, ep := range strings.Split(os.Getenv(containerdEnv), ",") {
		if ep != "" {
			e.endpoints = append(e.endpoints, ep)
		}
	}
	if e.kubeBin == "" || len(e.endpoints) == 0 {
		t.Skipf("%s and %s are unset: run make cluster-e2e (root), which builds the control plane, starts containerd and runs this test in a network namespace", kubeBinEnv, containerdEnv)
	}
	if e.busybox == "" {
		e.busybox = "docker.io/library/busybox:1.36"
	}
	return e
}

// node is one splitlet node: its stack and a CRI client of its containerd
// (not the gateway: what is left in the runtime is the question).
type node struct {
	name       string
	kubeconfig string // the node's own identity, sync's --kubeconfig
	stack      *launcher.Stack
	containerd runtimeapi.RuntimeServiceClient
}

// startControlPlane starts the cluster and returns it with an admin
// clientset; its logs are printed when the test fails.
func startControlPlane(t *testing.T, e env, dir string) (*cluster.Cluster, kubernetes.Interface) {
	t.Helper()
	start := time.Now()
	c, err := cluster.Start(t.Context(), cluster.Config{BinDir: e.kubeBin, Dir: filepath.Join(dir, "cp")})
	if err != nil {
		t.Fatalf("start the control plane: %v", err)
	}
	t.Logf("control plane ready in %v at %s", time.Since(start).Round(time.Millisecond), c.Server)
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.Processes() {
				t.Logf("last lines of %s:\n%s", p.LogPath, p.Tail(20))
			}
		}
		c.Stop()
	})
	return c, kubetest.Client(t, c.AdminKubeconfig)
}

// startNode starts a gateway (in front of endpoint), admission and sync;
// sync registers name with the node's own credential and runs one static
// pod of image, staticPodName in kube-system. The credential is a client
// certificate the test issues or, given a bootstrap kubeconfig, one sync
// requests itself (TLS bootstrap).
func startNode(t *testing.T, c *cluster.Cluster, dir, name, endpoint, image, bootstrapKubeconfig string) *node {
	t.Helper()
	var kubeconfig string
	var credentials []string
	if bootstrapKubeconfig == "" {
		var err error
		if kubeconfig, err = c.NodeKubeconfig(name); err != nil {
			t.Fatal(err)
		}
	} else {
		// Written by sync once its certificate is issued. This node also
		// serves the node API, with a serving certificate from the
		// kubelet-serving signer, on an address the API server may proxy
		// to (hack/cluster-e2e.sh puts it on lo).
		kubeconfig = filepath.Join(dir, name+".kubeconfig")
		credentials = append(credentials, "--bootstrap-kubeconfig="+bootstrapKubeconfig, "--cert-dir="+filepath.Join(dir, name+"-pki"),
			"--node-ip="+nodeAPIIP, "--node-api-addr="+net.JoinHostPort(nodeAPIIP, "10250"), "--client-ca-file="+c.CAFile,
			"--rotate-server-certificates")
	}
	manifests := filepath.Join(dir, name+"-manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(manifests, "static.yaml"), fmt.Appendf(nil, `apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: kube-system}
spec:
  hostNetwork: true
  containers:
  - {name: app, image: %s, imagePullPolicy: Never, command: [sleep, "3600"]}
`, staticPodName, image), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := launcher.Start(t.Context(), launcher.Config{
		BinDir:          binDir,
		Dir:             filepath.Join(dir, name),
		NodeName:        name,
		RuntimeEndpoint: endpoint,
		SyncArgs: append([]string{
			"--kubeconfig=" + kubeconfig,
			"--manifest-dir=" + manifests,
			"--relist-interval=1s",
			"--container-gc-period=2s",
		}, credentials...),
	})
	if err != nil {
		t.Fatalf("start node %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range st.Processes() {
				t.Logf("last lines of %s (%s):\n%s", p.LogPath, name, p.Tail(40))
			}
		}
		st.Stop()
	})
	return &node{name: name, kubeconfig: kubeconfig, stack: st, containerd: kubetest.CRI(t, endpoint)}
}

// kubectl runs the built kubectl as the cluster's admin, as a user would.
func kubectl(t *testing.T, e env, c *cluster.Cluster, stdin string, args ...string) string {
	t.Helper()
	return kubetest.Kubectl(t, filepath.Join(e.kubeBin, cluster.KubectlBinary), c.AdminKubeconfig, stdin, args...)
}

// podContainers lists the containers and sandboxes containerd holds for
// pods in namespace, in any state.
func (n *node) podContainers(t *testing.T, namespace string) (containers, sandboxes []string) {
	t.Helper()
	label := map[string]string{"io.kubernetes.pod.namespace": namespace}
	cs, err := n.containerd.ListContainers(t.Context(), &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: label}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Containers {
		containers = append(containers, fmt.Sprintf("%s(%s %s)", c.Metadata.GetName(), c.Labels["io.kubernetes.pod.name"], c.State))
	}
	ss, err := n.containerd.ListPodSandbox(t.Context(), &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: label}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss.Items {
		sandboxes = append(sandboxes, fmt.Sprintf("%s(%s)", s.Metadata.GetName(), s.State))
	}
	return containers, sandboxes
}

// A Deployment placed by kube-scheduler on splitlet nodes that run as
// system:node identities under the Node authorizer and NodeRestriction.
func TestDeploymentOnSplitletNodes(t *testing.T) {
	e := needEnv(t)
	dir := kubetest.TempDir(t, "", "scl")
	c, client := startControlPlane(t, e, dir)
	ctx := t.Context()

	began := time.Now()
	var nodes []*node
	names := map[string]bool{}
	for i, ep := range e.endpoints {
		// The first node's certificate is issued by the test; every
		// other node bootstraps its own.
		bootstrap := ""
		if i > 0 {
			bootstrap = bootstrapKubeconfig(t, client, c, dir)
		}
		n := startNode(t, c, dir, fmt.Sprintf("splitlet-%c", 'a'+i), ep, e.busybox, bootstrap)
		nodes = append(nodes, n)
		names[n.name] = true
	}
	cidrs := map[string]string{}
	launcher.WaitFor(t, 60*time.Second, "every node registered, Ready and given a pod CIDR", func() (bool, string) {
		var notReady []string
		for _, n := range nodes {
			obj, err := client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil {
				notReady = append(notReady, n.name+": "+err.Error())
				continue
			}
			ready := false
			for _, cond := range obj.Status.Conditions {
				ready = ready || (cond.Type == v1.NodeReady && cond.Status == v1.ConditionTrue)
			}
			if !ready || obj.Spec.PodCIDR == "" {
				notReady = append(notReady, fmt.Sprintf("%s: ready %v, podCIDR %q", n.name, ready, obj.Spec.PodCIDR))
				continue
			}
			cidrs[n.name] = obj.Spec.PodCIDR
		}
		return len(notReady) == 0, strings.Join(notReady, "; ")
	})
	for _, n := range nodes {
		obj, err := client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// As a kubelet's: the runtime's name and version, the images it holds.
		hasBusybox := false
		for _, img := range obj.Status.Images {
			hasBusybox = hasBusybox || slices.Contains(img.Names, e.busybox)
		}
		if !runtimeVersionRE.MatchString(obj.Status.NodeInfo.ContainerRuntimeVersion) || !hasBusybox || obj.Status.NodeInfo.BootID == "" {
			t.Errorf("node %s: nodeInfo %+v, images %+v; want containerd's version, a boot ID and %s among the images", n.name, obj.Status.NodeInfo, obj.Status.Images, e.busybox)
		}
	}
	seen := map[string]string{}
	for name, cidr := range cidrs {
		if other, dup := seen[cidr]; dup {
			t.Errorf("nodes %s and %s share pod CIDR %s", name, other, cidr)
		}
		seen[cidr] = name
	}
	t.Logf("%d node(s) Ready in %v with pod CIDRs %v", len(nodes), time.Since(began).Round(time.Millisecond), cidrs)

	replicas := 2 * len(nodes)
	began = time.Now()
	kubectl(t, e, c, deployment(replicas, e.busybox), "apply", "-f", "-")
	kubectl(t, e, c, "", "rollout", "status", "deployment/web", "--timeout=120s")
	t.Logf("%d replicas scheduled, started and Ready in %v", replicas, time.Since(began).Round(time.Millisecond))

	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		ready := false
		for _, cond := range p.Status.Conditions {
			ready = ready || (cond.Type == v1.PodReady && cond.Status == v1.ConditionTrue)
		}
		if !names[p.Spec.NodeName] || !ready {
			t.Errorf("pod %s on node %q, ready %v: want Ready on a splitlet node", p.Name, p.Spec.NodeName, ready)
		}
		perNode[p.Spec.NodeName]++
	}
	if len(pods.Items) != replicas {
		t.Errorf("%d pods, want %d", len(pods.Items), replicas)
	}
	// maxSkew 1 over kubernetes.io/hostname: an even spread.
	for _, n := range nodes {
		if perNode[n.name] != 2 {
			t.Errorf("node %s runs %d pods, want 2 (spread %v)", n.name, perNode[n.name], perNode)
		}
		containers, _ := n.podContainers(t, "default")
		running := 0
		for _, s := range containers {
			if strings.HasSuffix(s, "CONTAINER_RUNNING)") {
				running++
			}
		}
		if running != perNode[n.name] {
			t.Errorf("containerd of %s runs %d containers %v, want %d", n.name, running, containers, perNode[n.name])
		}
	}

	podNetwork(t, client, nodes, cidrs, replicas)
	if len(nodes) > 1 {
		tlsBootstrapped(t, client, nodes[1])
		servingCertificate(t, e, c, client, nodes[1])
	}
	mirrorPods(t, client, nodes)
	missingSecretBlocksStart(t, client, nodes[0], e.busybox)

	if len(nodes) > 1 {
		nodeRestricted(t, client, nodes[0], nodes[1])
	} else {
		t.Log("one node: the Node authorizer and NodeRestriction are not tried across nodes")
	}

	rolloutRestart(t, e, c, client, replicas)
	runJob(t, e, c)
	if len(nodes) > 1 {
		drain(t, e, c, client, nodes[0], replicas)
	}

	began = time.Now()
	kubectl(t, e, c, "", "delete", "deployment", "web", "--wait=true")
	launcher.WaitFor(t, 90*time.Second, "the Deployment's pods gone from the API server", func() (bool, string) {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, p := range pods.Items {
			left = append(left, p.Name+" on "+p.Spec.NodeName)
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
	launcher.WaitFor(t, 60*time.Second, "no container or sandbox left in any containerd", func() (bool, string) {
		var left []string
		for _, n := range nodes {
			containers, sandboxes := n.podContainers(t, "default")
			if len(containers)+len(sandboxes) > 0 {
				sort.Strings(containers)
				left = append(left, fmt.Sprintf("%s: containers %v sandboxes %v", n.name, containers, sandboxes))
			}
		}
		return len(left) == 0, strings.Join(left, "; ")
	})
	t.Logf("deleted: no pod, container or sandbox left %v after kubectl delete", time.Since(began).Round(time.Millisecond))
}

// webPods returns the Deployment's pods by name, with their node, leaving
// out those being deleted.
func webPods(t *testing.T, client kubernetes.Interface) map[string]string {
	t.Helper()
	pods, err := client.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out
}

// rolloutRestart checks that `kubectl rollout restart` replaces every
// pod of the Deployment with a new Ready one.
func rolloutRestart(t *testing.T, e env, c *cluster.Cluster, client kubernetes.Interface, replicas int) {
	t.Helper()
	before := webPods(t, client)
	kubectl(t, e, c, "", "rollout", "restart", "deployment/web")
	kubectl(t, e, c, "", "rollout", "status", "deployment/web", "--timeout=120s")
	launcher.WaitFor(t, 60*time.Second, "only new pods left after the restart", func() (bool, string) {
		after := webPods(t, client)
		for name := range after {
			if _, old := before[name]; old {
				return false, fmt.Sprintf("%s still there", name)
			}
		}
		return len(after) == replicas, fmt.Sprintf("%d pods", len(after))
	})
}

// runJob checks that a Job's pod runs to completion on a splitlet node and
// the Job turns Complete.
func runJob(t *testing.T, e env, c *cluster.Cluster) {
	t.Helper()
	kubectl(t, e, c, fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: default}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      hostNetwork: true
      nodeSelector: {%s: %s}
      tolerations:
      - {key: %s, operator: Exists, effect: NoSchedule}
      containers:
      - {name: once, image: %s, imagePullPolicy: IfNotPresent, command: [sh, -c, "echo done"]}
`, nodelabels.AgentLabel, nodelabels.AgentLabelValue, nodelabels.AgentLabel, e.busybox), "apply", "-f", "-")
	kubectl(t, e, c, "", "wait", "--for=condition=Complete", "job/once", "--timeout=90s")
	kubectl(t, e, c, "", "delete", "job", "once", "--wait=true")
}

// drain checks that `kubectl drain` evicts node's pods through the
// Eviction API and that the Deployment's pods come back Ready on the other
// nodes; the node is uncordoned after.
func drain(t *testing.T, e env, c *cluster.Cluster, client kubernetes.Interface, n *node, replicas int) {
	t.Helper()
	kubectl(t, e, c, "", "drain", n.name, "--ignore-daemonsets", "--timeout=120s")
	kubectl(t, e, c, "", "rollout", "status", "deployment/web", "--timeout=120s")
	launcher.WaitFor(t, 60*time.Second, "every pod of the Deployment off the drained node", func() (bool, string) {
		pods := webPods(t, client)
		for name, on := range pods {
			if on == n.name {
				return false, fmt.Sprintf("%s still on %s", name, on)
			}
		}
		return len(pods) == replicas, fmt.Sprintf("%d pods", len(pods))
	})
	launcher.WaitFor(t, 60*time.Second, "no container of the Deployment left on the drained node", func() (bool, string) {
		containers, _ := n.podContainers(t, "default")
		return len(containers) == 0, fmt.Sprint(containers)
	})
	kubectl(t, e, c, "", "uncordon", n.name)
}

// missingSecretBlocksStart checks the kubelet's rule for a missing
// non-optional Secret volume: the pod waits in ContainerCreating with a
// FailedMount event naming the Secret, and starts once it exists.
func missingSecretBlocksStart(t *testing.T, client kubernetes.Interface, n *node, image string) {
	t.Helper()
	ctx := t.Context()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "late-secret-user", Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:                      n.name,
			HostNetwork:                   true,
			TerminationGracePeriodSeconds: new(int64),
			Tolerations:                   []v1.Toleration{{Key: nodelabels.AgentLabel, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
			Containers: []v1.Container{{Name: "app", Image: image, ImagePullPolicy: v1.PullIfNotPresent,
				Command:      []string{"sh", "-c", "cat /etc/late/key; sleep 3600"},
				VolumeMounts: []v1.VolumeMount{{Name: "late", MountPath: "/etc/late"}}}},
			Volumes: []v1.Volume{{Name: "late", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "late-secret"}}}},
		},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	launcher.WaitFor(t, 60*time.Second, "a FailedMount event for the missing Secret, the pod in ContainerCreating", func() (bool, string) {
		evs, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name})
		if err != nil {
			return false, err.Error()
		}
		failedMount := false
		for _, ev := range evs.Items {
			failedMount = failedMount || (ev.Reason == "FailedMount" && strings.Contains(ev.Message, `secret "late-secret" not found`))
		}
		p, err := client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		creating := len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "ContainerCreating"
		return failedMount && creating && p.Status.Phase == v1.PodPending,
			fmt.Sprintf("FailedMount event %v, phase %s, statuses %+v", failedMount, p.Status.Phase, p.Status.ContainerStatuses)
	})
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "late-secret", Namespace: "default"}, StringData: map[string]string{"key": "v"}}
	if _, err := client.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	launcher.WaitFor(t, 60*time.Second, "the pod Running once its Secret exists", func() (bool, string) {
		p, err := client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == v1.PodRunning, string(p.Status.Phase)
	})
	if err := client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
}

// staticPodName is each node's static pod; its mirror is named
// <staticPodName>-<node>.
const staticPodName = "static-sleep"

// mirrorPods checks that each node's static pod shows as a Running mirror
// pod, which NodeRestriction let the node create, and that a deleted
// mirror comes back.
func mirrorPods(t *testing.T, client kubernetes.Interface, nodes []*node) {
	t.Helper()
	ctx := t.Context()
	pods := client.CoreV1().Pods("kube-system")
	uids := map[string]types.UID{}
	launcher.WaitFor(t, 60*time.Second, "a Running mirror pod of each node's static pod", func() (bool, string) {
		var missing []string
		for _, n := range nodes {
			p, err := pods.Get(ctx, staticPodName+"-"+n.name, metav1.GetOptions{})
			if err != nil {
				missing = append(missing, fmt.Sprintf("%s: %v", n.name, err))
				continue
			}
			if p.Status.Phase != v1.PodRunning || p.Annotations[v1.MirrorPodAnnotationKey] == "" {
				missing = append(missing, fmt.Sprintf("%s: phase %q, mirror annotation %q, status %+v", n.name, p.Status.Phase, p.Annotations[v1.MirrorPodAnnotationKey], p.Status))
				continue
			}
			uids[n.name] = p.UID
		}
		return len(missing) == 0, strings.Join(missing, "; ")
	})
	name := staticPodName + "-" + nodes[0].name
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	launcher.WaitFor(t, 60*time.Second, "the deleted mirror pod back", func() (bool, string) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.UID != uids[nodes[0].name] && p.Status.Phase == v1.PodRunning, fmt.Sprintf("uid %s phase %s", p.UID, p.Status.Phase)
	})
}

// nodeRestricted checks that the identity sync of node a runs with may
// write its own pods' status but neither read nor write a pod bound to node
// b, nor node b's Node: the Node authorizer and NodeRestriction apply. The
// objects of node b are read with the admin's client.
func nodeRestricted(t *testing.T, admin kubernetes.Interface, a, b *node) {
	t.Helper()
	ctx := t.Context()
	client := kubetest.Client(t, a.kubeconfig)
	pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var own, other *v1.Pod
	for i := range pods.Items {
		switch pods.Items[i].Spec.NodeName {
		case a.name:
			own = &pods.Items[i]
		case b.name:
			other = &pods.Items[i]
		}
	}
	if own == nil || other == nil {
		t.Fatalf("want a pod on each of %s and %s", a.name, b.name)
	}
	// The same write on both: a condition only this test sets.
	write := func(p *v1.Pod) error {
		next := p.DeepCopy()
		next.Status.Conditions = append(next.Status.Conditions, v1.PodCondition{
			Type: "splitlet.dev/node-restriction-test", Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()})
		_, err := client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		return err
	}
	if err := write(own); err != nil && !apierrors.IsConflict(err) {
		t.Errorf("%s updating the status of its own pod %s: %v", a.name, own.Name, err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s %s: got %v, want Forbidden", a.name, what, err)
			return
		}
		t.Logf("%s %s: refused: %v", a.name, what, err)
	}
	refused("updating the status of "+b.name+"'s pod", write(other))
	_, err = client.CoreV1().Pods(other.Namespace).Get(ctx, other.Name, metav1.GetOptions{})
	refused("reading "+b.name+"'s pod", err)
	n, err := admin.CoreV1().Nodes().Get(ctx, b.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels["splitlet.dev/test"] = "x"
	_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	refused("updating Node "+b.name, err)
}

// deployment is a Deployment of busybox pods that only splitlet nodes
// take (nodeSelector and toleration of splitlet's taint), spread evenly
// over them, each serving its ConfigMap on port 8080 of its pod address,
// behind the Service web, with what a real
// Deployment's pods reference — a ConfigMap volume, a Secret in the env,
// the default service account's token (the ServiceAccount plugin adds its
// kube-api-access volume) — and Ready by an exec probe that checks all
// three.
func deployment(replicas int, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: web-config, namespace: default}
data: {greeting: hello}
---
apiVersion: v1
kind: Secret
metadata: {name: web-secret, namespace: default}
stringData: {password: s3cret}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: %d
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      nodeSelector: {%s: %s}
      tolerations:
      - {key: %s, operator: Exists, effect: NoSchedule}
      topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: DoNotSchedule
        # A cordoned (drained) node is no domain of the spread.
        nodeTaintsPolicy: Honor
        labelSelector:
          matchLabels: {app: web}
      terminationGracePeriodSeconds: 5
      containers:
      - name: app
        image: %s
        imagePullPolicy: IfNotPresent
        # busybox's httpd serves the ConfigMap's files on the pod's address.
        command: [sh, -c, "httpd -p 8080 -h /etc/web; touch /tmp/ready; trap 'exit 0' TERM; while true; do sleep 1; done"]
        ports:
        - {name: http, containerPort: 8080}
        env:
        - name: PASSWORD
          valueFrom: {secretKeyRef: {name: web-secret, key: password}}
        volumeMounts:
        - {name: config, mountPath: /etc/web}
        readinessProbe:
          exec:
            command: [sh, -c, 'test -f /tmp/ready && test "$(cat /etc/web/greeting)" = hello && test "$PASSWORD" = s3cret && test -s /var/run/secrets/kubernetes.io/serviceaccount/token']
          periodSeconds: 2
      volumes:
      - name: config
        configMap: {name: web-config}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
`, replicas, nodelabels.AgentLabel, nodelabels.AgentLabelValue, nodelabels.AgentLabel, image)
}

// podNetwork checks the pod network the nodes' containerd built from the
// pod CIDRs sync handed them: each pod's IP lies in its node's CIDR, the
// test (in the nodes' namespace) reaches each pod's server, a pod on one
// node reaches a pod on the other, and the Service's EndpointSlices list
// every pod's address as ready (the endpointslice controller refuses the
// loopback address host-network pods had here).
func podNetwork(t *testing.T, client kubernetes.Interface, nodes []*node, cidrs map[string]string, replicas int) {
	t.Helper()
	ctx := t.Context()
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	ips := map[string]string{} // pod IP -> node
	for _, p := range pods.Items {
		_, cidr, err := net.ParseCIDR(cidrs[p.Spec.NodeName])
		if err != nil {
			t.Fatalf("pod CIDR of %s: %v", p.Spec.NodeName, err)
		}
		ip := net.ParseIP(p.Status.PodIP)
		if ip == nil || !cidr.Contains(ip) {
			t.Errorf("pod %s on %s has IP %q, want one in %s", p.Name, p.Spec.NodeName, p.Status.PodIP, cidr)
			continue
		}
		ips[p.Status.PodIP] = p.Spec.NodeName
		body := httpGet(t, "http://"+net.JoinHostPort(p.Status.PodIP, "8080")+"/greeting")
		if body != "hello" {
			t.Errorf("GET greeting from pod %s at %s: %q, want hello", p.Name, p.Status.PodIP, body)
		}
	}
	if len(ips) != replicas {
		t.Fatalf("%d distinct pod IPs %v, want %d", len(ips), ips, replicas)
	}
	if len(nodes) > 1 {
		crossNode(t, nodes[0], ips)
	}
	launcher.WaitFor(t, 60*time.Second, "every pod's address ready in the Service's EndpointSlices", func() (bool, string) {
		eps, err := client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, err.Error()
		}
		ready := map[string]bool{}
		var seen []string
		for _, sl := range eps.Items {
			for _, ep := range sl.Endpoints {
				r := ep.Conditions.Ready != nil && *ep.Conditions.Ready
				for _, a := range ep.Addresses {
					ready[a] = r
					seen = append(seen, fmt.Sprintf("%s ready=%v", a, r))
				}
			}
		}
		for ip := range ips {
			if !ready[ip] {
				return false, strings.Join(seen, ", ")
			}
		}
		return len(ready) == len(ips), strings.Join(seen, ", ")
	})
}

// crossNode runs wget in a container of node a's pod towards a pod on
// another node: traffic between the nodes' bridges.
func crossNode(t *testing.T, a *node, ips map[string]string) {
	t.Helper()
	var target string
	for ip, on := range ips {
		if on != a.name {
			target = ip
		}
	}
	cs, err := a.containerd.ListContainers(t.Context(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.pod.namespace": "default", "io.kubernetes.container.name": "app"}}})
	if err != nil {
		t.Fatal(err)
	}
	if target == "" || len(cs.Containers) == 0 {
		t.Fatalf("want a running app container on %s and a pod elsewhere (IPs %v)", a.name, ips)
	}
	resp, err := a.containerd.ExecSync(t.Context(), &runtimeapi.ExecSyncRequest{ContainerId: cs.Containers[0].Id, Timeout: 10,
		Cmd: []string{"wget", "-q", "-O", "-", "http://" + net.JoinHostPort(target, "8080") + "/greeting"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.ExitCode != 0 || string(resp.Stdout) != "hello" {
		t.Fatalf("wget from a pod on %s to %s (on %s): exit %d, out %q, err %q", a.name, target, ips[target], resp.ExitCode, resp.Stdout, resp.Stderr)
	}
	t.Logf("a pod on %s reached %s on %s", a.name, target, ips[target])
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
	}
	return string(b)
}

// bootstrapToken is the token the bootstrapping nodes authenticate with
// (id.secret), as kubeadm's join token.
const bootstrapToken = "splt01.0123456789abcdef"

// bootstrapKubeconfig sets up TLS bootstrapping as kubeadm does — a
// bootstrap token Secret in kube-system, and bindings that let its group
// request node client certificates, have them approved by
// kube-controller-manager, and let nodes renew their own — and returns a
// kubeconfig holding the token. Idempotent.
func bootstrapKubeconfig(t *testing.T, client kubernetes.Interface, c *cluster.Cluster, dir string) string {
	t.Helper()
	ctx := t.Context()
	id, secret, _ := strings.Cut(bootstrapToken, ".")
	token := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
		Type:       v1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"token-id": id, "token-secret": secret,
			"usage-bootstrap-authentication": "true",
			"auth-extra-groups":              "system:bootstrappers:splitlet",
		},
	}
	if _, err := client.CoreV1().Secrets("kube-system").Create(ctx, token, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for name, b := range map[string]struct{ role, group string }{
		"splitlet:node-bootstrapper":                     {"system:node-bootstrapper", "system:bootstrappers"},
		"splitlet:node-autoapprove-bootstrap":            {"system:certificates.k8s.io:certificatesigningrequests:nodeclient", "system:bootstrappers"},
		"splitlet:node-autoapprove-certificate-rotation": {"system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"},
	} {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: b.group}},
		}
		if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "bootstrap.kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: splitlet
  cluster: {server: %s, certificate-authority: %s}
users:
- name: bootstrap
  user: {token: %s}
contexts:
- name: splitlet
  context: {cluster: splitlet, user: bootstrap}
current-context: splitlet
`, c.Server, c.CAFile, bootstrapToken)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tlsBootstrapped checks that node n got its identity by TLS bootstrap:
// one CertificateSigningRequest from the bootstrap token, approved and
// signed by kube-controller-manager, and a kubeconfig sync wrote whose
// certificate is system:node:<n> in system:nodes. A restart of sync uses
// that certificate and makes no new request.
func tlsBootstrapped(t *testing.T, client kubernetes.Interface, n *node) {
	t.Helper()
	ctx := t.Context()
	id, _, _ := strings.Cut(bootstrapToken, ".")
	requests := func() []certificatesv1.CertificateSigningRequest {
		csrs, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var mine []certificatesv1.CertificateSigningRequest
		for _, csr := range csrs.Items {
			client := csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName
			if client && (csr.Spec.Username == "system:bootstrap:"+id || csr.Spec.Username == "system:node:"+n.name) {
				mine = append(mine, csr)
			}
		}
		return mine
	}
	csrs := requests()
	if len(csrs) != 1 {
		t.Fatalf("%d client certificate signing requests of %s, want 1: %+v", len(csrs), n.name, csrs)
	}
	csr := csrs[0]
	approved := false
	for _, c := range csr.Status.Conditions {
		approved = approved || (c.Type == certificatesv1.CertificateApproved && c.Status == v1.ConditionTrue)
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName || !approved || len(csr.Status.Certificate) == 0 {
		t.Fatalf("CSR %s: signer %s, approved %v, %d bytes of certificate; want %s, approved and issued",
			csr.Name, csr.Spec.SignerName, approved, len(csr.Status.Certificate), certificatesv1.KubeAPIServerClientKubeletSignerName)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", n.kubeconfig)
	if err != nil {
		t.Fatalf("the kubeconfig sync wrote: %v", err)
	}
	pemBytes, err := os.ReadFile(rc.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		t.Fatalf("%s holds no PEM block", rc.CertFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "system:node:"+n.name || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Fatalf("bootstrapped certificate of %s is %s %v, want system:node:%s [system:nodes]", n.name, cert.Subject.CommonName, cert.Subject.Organization, n.name)
	}
	t.Logf("%s bootstrapped: CSR %s approved and signed, certificate %s valid until %s", n.name, csr.Name, cert.Subject.CommonName, cert.NotAfter.Format(time.RFC3339))

	restarted := time.Now()
	n.stack.Sync.Kill()
	if err := n.stack.Sync.Restart(ctx, 30*time.Second); err != nil {
		t.Fatalf("restart sync of %s: %v", n.name, err)
	}
	launcher.WaitFor(t, 30*time.Second, n.name+"'s Lease renewed by the restarted sync", func() (bool, string) {
		lease, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		renewed := lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(restarted)
		return renewed, fmt.Sprintf("renewed %v", lease.Spec.RenewTime)
	})
	if got := len(requests()); got != 1 {
		t.Errorf("%d client certificate signing requests of %s after a restart, want still 1", got, n.name)
	}
}

// nodeAPIIP is the address of the bootstrapping node's API;
// hack/cluster-e2e.sh puts it on lo (the API server does not proxy to
// loopback addresses).
const nodeAPIIP = "192.0.2.11"

// servingCertificate checks --rotate-server-certificates: node n asks the
// kubernetes.io/kubelet-serving signer for its node API's certificate, an
// operator approves the request (kube-controller-manager does not approve
// serving certificates itself), and the API server, which verifies node
// certificates against the cluster CA, then reaches the node API: its pod
// list through the node proxy and `kubectl exec`.
func servingCertificate(t *testing.T, e env, c *cluster.Cluster, client kubernetes.Interface, n *node) {
	t.Helper()
	ctx := t.Context()
	var pod string
	for name, on := range webPods(t, client) {
		if on == n.name {
			pod = name
		}
	}
	// The operator's part: approve what the node asked for. Each start of
	// sync that has no certificate yet asks anew (tlsBootstrapped
	// restarted it), so every pending request of the node is approved.
	approved := map[string]bool{}
	launcher.WaitFor(t, 60*time.Second, n.name+"'s node API reached through the API server with its signed certificate", func() (bool, string) {
		csrs, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, csr := range csrs.Items {
			if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || csr.Spec.Username != "system:node:"+n.name || approved[csr.Name] {
				continue
			}
			kubectl(t, e, c, "", "certificate", "approve", csr.Name)
			approved[csr.Name] = true
		}
		raw, err := client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.name, "proxy", "pods").DoRaw(ctx)
		if err != nil {
			return false, fmt.Sprintf("%v (approved %d kubelet-serving CSRs)", err, len(approved))
		}
		return strings.Contains(string(raw), pod), string(raw)
	})
	if out := kubectl(t, e, c, "", "exec", pod, "--", "echo", "served"); strings.TrimSpace(out) != "served" {
		t.Errorf("kubectl exec on %s: %q, want served", n.name, out)
	}
}
