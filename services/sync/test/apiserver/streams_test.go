package apiserver_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// What the streaming test needs besides the API server: a containerd (the
// fake backend serves no streams) with the busybox image imported, and a
// kubectl. The names are hack/e2e.sh's and `make cluster-e2e`'s.
const (
	containerdEnv = "SPLITLET_CONTAINERD_ENDPOINT"
	kubeBinEnv    = "SPLITLET_KUBE_BIN_DIR"
	busyboxEnv    = "SPLITLET_BUSYBOX_IMAGE"
)

// TestKubectlStreamsThroughAPIServer: kubectl exec and port-forward reach a
// container on containerd as on a kubelet's node: kubectl talks to the API
// server (WebSocket by default, SPDY when told to), which passes
// WebSockets through to a node declaring ExtendWebSocketsToKubelet, dials
// sync's node API with its kubelet client certificate, and sync proxies the
// stream to containerd's streaming server through the URL the gateway got
// from CRI Exec or PortForward. stdout, stderr, stdin and the exit code of
// `kubectl exec` come through, and an HTTP server in the pod answers
// through `kubectl port-forward`.
func TestKubectlStreamsThroughAPIServer(t *testing.T) {
	pki, endpoint, kubeBin := streamsEnv(t)
	image := busyboxImage()
	admin, kubeconfig := kubeClient(t)
	ctx := t.Context()
	_, s, node, nodeAPIPort := nodeAPIStack(t, pki, endpoint)

	// A host-network pod (the private containerd has no CNI) serving
	// index.html and a 16 MiB file on a free port of this machine.
	port := freePort(t)
	ns := "default"
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "streams-" + node, Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:                     node,
			HostNetwork:                  true,
			AutomountServiceAccountToken: new(false),
			Tolerations:                  []v1.Toleration{{Key: "splitlet.dev/agent", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
			Containers: []v1.Container{{Name: "app", Image: image, ImagePullPolicy: v1.PullNever,
				Command: []string{"sh", "-c", fmt.Sprintf("mkdir -p /www && echo hello from the pod >/www/index.html && "+
					"dd if=/dev/zero of=/www/big bs=1048576 count=16 2>/dev/null && exec httpd -f -p 127.0.0.1:%d -h /www", port)}}},
		},
	}
	created, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Before the stack stops (cleanups run last first): the pod's
		// processes must not outlive the test in containerd, its HTTP
		// server holding a port.
		zero := int64(0)
		_ = admin.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		waitFor(t, 60*time.Second, "containerd to run nothing of the deleted pod", func() (bool, string) {
			resp, err := s.cri.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
				State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
				LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(created.UID)},
			}})
			if err != nil {
				return false, err.Error()
			}
			return len(resp.GetItems()) == 0, fmt.Sprintf("%d ready sandboxes", len(resp.GetItems()))
		})
	})
	waitFor(t, 90*time.Second, "the pod Running on containerd", func() (bool, string) {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		return p.Status.Phase == v1.PodRunning && running, fmt.Sprintf("phase %q, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})

	kubectl := filepath.Join(kubeBin, "kubectl")
	for _, tc := range []struct {
		desc string
		env  string // kubectl's protocol switch
	}{
		{desc: "WebSocket (kubectl's default)", env: "KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true"},
		{desc: "SPDY", env: "KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false"},
	} {
		t.Run("exec over "+tc.desc, func(t *testing.T) {
			began := time.Now()
			stdout, stderr, code := runCmd(t, kubectl, []string{tc.env}, "",
				"--kubeconfig", kubeconfig, "exec", "-n", ns, pod.Name, "-c", "app", "--", "sh", "-c", "echo hi; echo err >&2; exit 3")
			t.Logf("kubectl exec took %v", time.Since(began).Round(time.Millisecond))
			if code != 3 || stdout != "hi\n" || !strings.HasPrefix(stderr, "err\n") {
				t.Errorf("kubectl exec: exit %d, stdout %q, stderr %q; want exit 3, %q, %q first", code, stdout, stderr, "hi\n", "err\n")
			}
			stdout, stderr, code = runCmd(t, kubectl, []string{tc.env}, "hello\nworld\n",
				"--kubeconfig", kubeconfig, "exec", "-i", "-n", ns, pod.Name, "--", "cat")
			if code != 0 || stdout != "hello\nworld\n" {
				t.Errorf("kubectl exec -i cat: exit %d, stdout %q, stderr %q; want stdin back", code, stdout, stderr)
			}
			// kubectl exec -it with a terminal (script gives it a pty): the
			// command runs on a terminal of the container's.
			if script, err := osexec.LookPath("script"); err == nil {
				stdout, stderr, code = runCmd(t, script, []string{tc.env}, "", "-qec", strings.Join([]string{
					kubectl, "--kubeconfig", kubeconfig, "exec", "-it", "-n", ns, pod.Name, "--", "sh", "-c", "'tty; exit 4'"}, " "), "/dev/null")
				if code != 4 || !strings.Contains(stdout, "/dev/pts/") {
					t.Errorf("kubectl exec -it tty: exit %d, stdout %q, stderr %q; want a /dev/pts terminal and exit 4", code, stdout, stderr)
				}
			} else {
				t.Log("no script(1) to give kubectl a terminal: exec -it not tried")
			}
		})
	}

	// The round trip of an exec (`echo ok`) without kubectl's start-up,
	// with client-go's executors: through the API server, the node API and
	// the gateway to containerd, and, as the baseline, the CRI Exec
	// through the gateway with the stream straight to containerd.
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	containerID := func() string {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) != 1 {
			t.Fatalf("pod: %v", err)
		}
		_, id, _ := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
		return id
	}()
	for _, path := range []string{"API server, WebSocket", "API server, SPDY", "containerd directly, SPDY"} {
		times := make([]time.Duration, 0, 10)
		for range cap(times) {
			began := time.Now()
			var out string
			switch path {
			case "API server, WebSocket":
				out = execEchoOK(t, admin, rc, ns, pod.Name, true)
			case "API server, SPDY":
				out = execEchoOK(t, admin, rc, ns, pod.Name, false)
			default:
				out = execEchoOKDirect(t, s, containerID)
			}
			times = append(times, time.Since(began))
			if out != "ok\n" {
				t.Fatalf("exec echo ok (%s): %q", path, out)
			}
		}
		slices.Sort(times)
		t.Logf("exec round trip, %s: median %v, min %v, max %v over %d", path,
			times[len(times)/2].Round(100*time.Microsecond), times[0].Round(100*time.Microsecond),
			times[len(times)-1].Round(100*time.Microsecond), len(times))
	}

	for _, tc := range []struct {
		desc string
		env  string
	}{
		{desc: "SPDY tunnelled in WebSocket (kubectl's default)", env: "KUBECTL_PORT_FORWARD_WEBSOCKETS=true"},
		{desc: "SPDY", env: "KUBECTL_PORT_FORWARD_WEBSOCKETS=false"},
	} {
		t.Run("port-forward over "+tc.desc, func(t *testing.T) {
			local := portForward(t, kubectl, tc.env, kubeconfig, ns, pod.Name, port)
			body, _ := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/", local))
			if string(body) != "hello from the pod\n" {
				t.Errorf("GET / through kubectl port-forward: %q", body)
			}
			body, took := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/big", local))
			if len(body) != 16<<20 {
				t.Errorf("GET /big through kubectl port-forward: %d bytes, want 16 MiB", len(body))
			}
			t.Logf("16 MiB through kubectl port-forward in %v: %.0f MiB/s", took.Round(time.Millisecond), 16/took.Seconds())
		})
	}

	// The Node declares ExtendWebSocketsToKubelet, so the API server passed
	// kubectl's WebSockets through and the node API translated them for
	// the runtime, as a v1.36 kubelet does: its counter says so.
	raw := nodeAPIGet(t, pki, nodeAPIPort, "/metrics")
	for _, sub := range []string{"exec", "portforward"} {
		line := fmt.Sprintf(`kubelet_websocket_streaming_requests_total{subresource=%q}`, sub)
		if !strings.Contains(string(raw), line) {
			t.Errorf("the node API counted no WebSocket %s (%s): the API server translated it instead", sub, line)
		}
	}
}

// streamsEnv returns what the kubectl stream tests need besides the API
// server — its PKI, a containerd endpoint and the kubectl directory — or
// skips t saying what is missing.
func streamsEnv(t *testing.T) (pki, endpoint, kubeBin string) {
	t.Helper()
	pki, endpoint, kubeBin = os.Getenv(pkiEnv), os.Getenv(containerdEnv), os.Getenv(kubeBinEnv)
	if pki == "" || endpoint == "" || kubeBin == "" {
		t.Skipf("needs %s (hack/apiserver.sh env), %s (a containerd with the busybox image, as hack/e2e.sh starts) and %s (kubectl)",
			pkiEnv, containerdEnv, kubeBinEnv)
	}
	return pki, endpoint, kubeBin
}

// busyboxImage is the busybox image imported into the test's containerd.
func busyboxImage() string {
	if image := os.Getenv(busyboxEnv); image != "" {
		return image
	}
	return "docker.io/library/busybox:1.36"
}

// runCmd runs a command with extra environment and stdin and returns its
// output and exit code.
func runCmd(t *testing.T, bin string, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := osexec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *osexec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	return "", "", 0
}

// execEchoOK runs `echo ok` in the pod through the API server's exec
// subresource, over WebSocket v5 or SPDY, and returns its stdout.
func execEchoOK(t *testing.T, client kubernetes.Interface, rc *rest.Config, ns, pod string, websocket bool) string {
	t.Helper()
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&v1.PodExecOptions{Container: "app", Command: []string{"echo", "ok"}, Stdout: true}, scheme.ParameterCodec)
	var (
		exec remotecommand.Executor
		err  error
	)
	if websocket {
		exec, err = remotecommand.NewWebSocketExecutor(rc, http.MethodGet, req.URL().String())
	} else {
		exec, err = remotecommand.NewSPDYExecutor(rc, http.MethodPost, req.URL())
	}
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := exec.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: &out}); err != nil {
		t.Fatalf("exec (websocket %v): %v", websocket, err)
	}
	return out.String()
}

// execEchoOKDirect runs `echo ok` in the container as a kubelet would
// without a node API in between: CRI Exec through the gateway, then SPDY to
// the streaming URL containerd returned.
func execEchoOKDirect(t *testing.T, s *stack, containerID string) string {
	t.Helper()
	resp, err := s.cri.Exec(t.Context(), &runtimeapi.ExecRequest{ContainerId: containerID, Cmd: []string{"echo", "ok"}, Stdout: true})
	if err != nil {
		t.Fatalf("CRI Exec: %v", err)
	}
	u, err := url.Parse(resp.GetUrl())
	if err != nil {
		t.Fatal(err)
	}
	exec, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, u)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := exec.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: &out}); err != nil {
		t.Fatalf("exec at %s: %v", u, err)
	}
	return out.String()
}

var forwardingFrom = regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)`)

// portForward starts `kubectl port-forward` to the pod's port on a local
// port kubectl picks and returns that port once kubectl says it listens;
// kubectl is killed when the test ends.
func portForward(t *testing.T, kubectl, env, kubeconfig, ns, pod string, port int) int {
	t.Helper()
	cmd := osexec.Command(kubectl, "--kubeconfig", kubeconfig, "port-forward", "-n", ns, "--address", "127.0.0.1",
		"pod/"+pod, fmt.Sprintf(":%d", port))
	cmd.Env = append(os.Environ(), env)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	local := make(chan int, 1)
	go func() {
		defer close(exited)
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if m := forwardingFrom.FindStringSubmatch(lines.Text()); m != nil {
				var n int
				_, _ = fmt.Sscan(m[1], &n)
				local <- n
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case n := <-local:
		return n
	case <-exited:
		t.Fatalf("kubectl port-forward exited: %s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("kubectl port-forward did not listen within 30 s: %s", stderr.String())
	}
	return 0
}

// httpGet fetches url and returns the body and how long it took.
func httpGet(t *testing.T, url string) ([]byte, time.Duration) {
	t.Helper()
	began := time.Now()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	return body, time.Since(began)
}

// freePort is a TCP port free on this machine now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// nodeAPIGet reads path from the node API on 127.0.0.1:port as the API
// server does, with its kubelet client certificate (the API server's
// nodes/proxy refuses loopback addresses).
func nodeAPIGet(t *testing.T, pki string, port int32, path string) []byte {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(filepath.Join(pki, "kubelet-client.crt"), filepath.Join(pki, "kubelet-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(fmt.Sprintf("https://127.0.0.1:%d%s", port, path))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s from the node API: %d %s", path, resp.StatusCode, body)
	}
	return body
}
