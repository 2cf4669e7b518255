package apiserver_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"connectrpc.com/connect"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// A pod on containerd reads the API with the service account token sync
// mounted for it (the kube-api-access volume the ServiceAccount plugin
// adds, filled through TokenRequest): with RBAC granting its service
// account pod reads, GET /api/v1/namespaces/<ns>/pods answers a PodList.
func TestPodReadsTheAPIWithItsToken(t *testing.T) {
	endpoint := os.Getenv(containerdEnv)
	if endpoint == "" {
		t.Skipf("needs %s (a containerd with the busybox image): hack/apiserver-e2e.sh sets it", containerdEnv)
	}
	image := busyboxImage()
	client, s, node := nodeStackOn(t, endpoint)
	_, kubeconfig := kubeClient(t)
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns := "default"
	suffix := node[len("splitlet-it-"):]
	sa := "reader-" + suffix
	// The service account, allowed to read pods (the token the helper
	// returns is not used: the pod gets its own from sync).
	_ = serviceAccountToken(t, client, ns, sa, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}})
	// The pod runs on the host network of this namespace, where the API
	// server listens, a static reader built here and mounted from the
	// host: busybox's wget offers no TLS cipher suite the API server
	// accepts. It does not check the CA (this API server's
	// kube-root-ca.crt is a stand-in): the point is the token.
	url := strings.TrimSuffix(rc.Host, "/") + "/api/v1/namespaces/" + ns + "/pods"
	readerDir := buildTokenReader(t)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "api-reader-" + suffix, Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:           node,
			HostNetwork:        true,
			ServiceAccountName: sa,
			RestartPolicy:      v1.RestartPolicyNever,
			Tolerations:        []v1.Toleration{{Key: "splitlet.dev/agent", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
			Containers: []v1.Container{{Name: "app", Image: image, ImagePullPolicy: v1.PullNever,
				Command:      []string{"/reader/reader", url},
				VolumeMounts: []v1.VolumeMount{{Name: "reader", MountPath: "/reader", ReadOnly: true}}}},
			Volumes: []v1.Volume{{Name: "reader", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: readerDir}}}},
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	waitFor(t, 90*time.Second, "the pod to finish", func() (bool, string) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed, fmt.Sprintf("phase %s", p.Status.Phase)
	})
	// Its output, through sync's PodService (this stack serves no node
	// API for the API server's logs proxy).
	logs, err := s.PodService().
		Logs(ctx, connect.NewRequest(&podv1.LogsRequest{Namespace: ns, Name: pod.Name}))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for logs.Receive() {
		out.Write(logs.Msg().GetData())
	}
	p, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"kind":"PodList"`) || p.Status.Phase != v1.PodSucceeded {
		t.Fatalf("the pod's read of %s: phase %s, output %.300q", url, p.Status.Phase, out.String())
	}
}

// tokenReaderSource GETs its argument with the pod's service account token
// and prints the answer; it fails unless the API server says 200.
const tokenReaderSource = `package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	token, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/token")
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	req, _ := http.NewRequest(http.MethodGet, os.Args[1], nil)
	req.Header.Set("Authorization", "Bearer "+string(token))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%s\n%s\n", resp.Status, body)
	if resp.StatusCode != http.StatusOK {
		os.Exit(1)
	}
}
`

// buildTokenReader builds tokenReaderSource as a static binary (standard
// library only: no module proxy needed) and returns its directory.
func buildTokenReader(t *testing.T) string {
	t.Helper()
	src, out := t.TempDir(), t.TempDir()
	for name, content := range map[string]string{"go.mod": "module reader\n\ngo 1.26\n", "main.go": tokenReaderSource} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(out, "reader"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the token reader: %v\n%s", err, b)
	}
	// The container's user must reach it through the temporary
	// directories' 0700.
	if err := os.Chmod(out, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}
