package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// metricsServerEnv is a metrics-server binary (hack/apiserver-e2e.sh
// builds sigs.k8s.io/metrics-server v0.8.0).
const metricsServerEnv = "SPLITLET_METRICS_SERVER"

// TestKubectlTop: metrics-server, registered with the API server's
// aggregator as v1beta1.metrics.k8s.io, scrapes sync's /metrics/resource
// and `kubectl top pod` and `kubectl top node` show the pod's and the
// node's usage, as on a kubelet's node.
func TestKubectlTop(t *testing.T) {
	pki, ip, kubeBin, msBin := os.Getenv(pkiEnv), os.Getenv(nodeIPEnv), os.Getenv(kubeBinEnv), os.Getenv(metricsServerEnv)
	if pki == "" || ip == "" || kubeBin == "" || msBin == "" {
		t.Skipf("needs %s, %s (hack/apiserver.sh env), %s (kubectl) and %s (a metrics-server binary): hack/apiserver-e2e.sh sets them",
			pkiEnv, nodeIPEnv, kubeBinEnv, metricsServerEnv)
	}
	admin, kubeconfig := kubeClient(t)
	endpoint := os.Getenv(containerdEnv)
	_, _, node, _ := nodeAPIStackAt(t, pki, endpoint, ip)
	pod := runStatsPod(t, admin, node, endpoint != "")
	kubectl := filepath.Join(kubeBin, "kubectl")

	// metrics-server on the node's address (the aggregator's endpoints
	// may not be loopback), as the admin; it reaches the node API at the
	// Node's InternalIP and port, verifying its certificate with the test CA.
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "metrics-server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := osexec.Command(msBin,
		"--kubeconfig="+kubeconfig, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--bind-address="+ip, "--secure-port="+strconv.Itoa(port), "--cert-dir="+dir,
		"--kubelet-preferred-address-types=InternalIP", "--kubelet-use-node-status-port",
		"--kubelet-certificate-authority="+filepath.Join(pki, "ca.crt"),
		// The shortest resolution it takes; the scrape timeout must be
		// shorter.
		"--metric-resolution=10s", "--kubelet-request-timeout=5s", "--v=2")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			lines := strings.Split(string(b), "\n")
			t.Logf("metrics-server's last lines:\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	})

	// The APIService, through a Service whose endpoints name
	// metrics-server (no controller manager runs here to fill them).
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec:
  ports: [{port: 443, targetPort: %[1]d, protocol: TCP}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: metrics-server, namespace: kube-system}
subsets: [{addresses: [{ip: %[2]s}], ports: [{port: %[1]d, protocol: TCP}]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server-splitlet
  namespace: kube-system
  labels: {kubernetes.io/service-name: metrics-server}
addressType: IPv4
endpoints: [{addresses: [%[2]s], conditions: {ready: true}}]
ports: [{port: %[1]d, protocol: TCP}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  service: {name: metrics-server, namespace: kube-system, port: 443}
  group: metrics.k8s.io
  version: v1beta1
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
`, port, ip)
	env := []string{"KUBECONFIG=" + kubeconfig}
	if out, errOut, code := runCmd(t, kubectl, env, manifest, "apply", "-f", "-"); code != 0 {
		t.Fatalf("kubectl apply: %d %s %s", code, out, errOut)
	}
	t.Cleanup(func() {
		// Before metrics-server stops: an APIService nobody answers would
		// fail the discovery of every later test.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, args := range [][]string{
			{"delete", "apiservice", "v1beta1.metrics.k8s.io", "--ignore-not-found"},
			{"-n", "kube-system", "delete", "service,endpoints", "metrics-server", "--ignore-not-found"},
			{"-n", "kube-system", "delete", "endpointslice", "metrics-server-splitlet", "--ignore-not-found"},
		} {
			c := osexec.CommandContext(ctx, kubectl, args...)
			c.Env = append(os.Environ(), env...)
			if out, err := c.CombinedOutput(); err != nil {
				t.Logf("kubectl %s: %v %s", strings.Join(args, " "), err, out)
			}
		}
	})

	// metrics-server needs two scrapes, --metric-resolution apart, before
	// it reports a pod.
	var top string
	waitFor(t, 120*time.Second, "kubectl top pod", func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("metrics-server exited: %v", err)
		default:
		}
		out, errOut, code := runCmd(t, kubectl, env, "", "top", "pod", pod.Name, "-n", pod.Namespace, "--no-headers")
		top = out
		return code == 0 && strings.HasPrefix(out, pod.Name+" "), out + errOut
	})
	t.Logf("kubectl top pod: %s", strings.TrimSpace(top))
	// NAME CPU(cores) MEMORY(bytes), in MiB: a small container rounds to
	// 0Mi, so the working set itself is read from the metrics API.
	if f := strings.Fields(top); len(f) != 3 || !strings.HasSuffix(f[1], "m") || !strings.HasSuffix(f[2], "Mi") {
		t.Errorf("kubectl top pod: %q, want the pod's CPU and memory", top)
	}
	raw, err := admin.CoreV1().RESTClient().Get().
		AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", pod.Namespace, "pods", pod.Name).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("PodMetrics: %v", err)
	}
	var pm struct {
		Containers []struct {
			Name  string            `json:"name"`
			Usage map[string]string `json:"usage"`
		} `json:"containers"`
	}
	if err := json.Unmarshal(raw, &pm); err != nil {
		t.Fatal(err)
	}
	if len(pm.Containers) != 1 || pm.Containers[0].Name != "app" {
		t.Fatalf("PodMetrics %s: want container app", raw)
	}
	if mem, err := resource.ParseQuantity(pm.Containers[0].Usage["memory"]); err != nil || mem.Sign() <= 0 {
		t.Errorf("PodMetrics %s: want app's memory above zero", raw)
	} else {
		t.Logf("metrics-server: app uses %s of memory, %s of CPU", pm.Containers[0].Usage["memory"], pm.Containers[0].Usage["cpu"])
	}
	waitFor(t, 60*time.Second, "kubectl top node", func() (bool, string) {
		out, errOut, code := runCmd(t, kubectl, env, "", "top", "node", node, "--no-headers")
		top = out
		return code == 0 && strings.HasPrefix(out, node+" "), out + errOut
	})
	t.Logf("kubectl top node: %s", strings.TrimSpace(top))
}
