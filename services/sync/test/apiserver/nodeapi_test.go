package apiserver_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// pkiEnv is hack/apiserver.sh's certificate directory: ca.crt (which signed
// the API server's kubelet client certificate) and node-api.crt/.key (a
// serving certificate for 127.0.0.1 the API server verifies with
// --kubelet-certificate-authority).
const pkiEnv = "SPLITLET_APISERVER_PKI"

// kubeletClientUser is the API server's kubelet client certificate's CN.
const kubeletClientUser = "kube-apiserver-kubelet-client"

// TestNodeAPIThroughAPIServer: sync serves the node API, its Node says where,
// and the API server reaches it as it reaches a kubelet: `kubectl logs`
// (plain, tailLines, follow) returns what the container printed. Called
// directly, the node API refuses a request without credentials (401) and a
// user who may read nodes/log but not nodes/proxy (403), and answers the
// API server's kubelet client certificate. (/api/v1/nodes/<node>/proxy is
// not tried: the API server refuses to proxy to a loopback address, and
// this test's node is 127.0.0.1.)
func TestNodeAPIThroughAPIServer(t *testing.T) {
	pki := os.Getenv(pkiEnv)
	if pki == "" {
		t.Skip(pkiEnv + " is unset: start an API server with hack/apiserver.sh start and eval \"$(hack/apiserver.sh env)\"")
	}
	admin, _ := kubeClient(t)
	ctx := t.Context()
	_, s, node, port := nodeAPIStack(t, pki, "")

	ns := "default"
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "logs-" + node, Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:    node,
			Tolerations: []v1.Toleration{{Key: "splitlet.dev/agent", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
			Containers: []v1.Container{{Name: "app", Image: "busybox:1.36",
				Env: []v1.EnvVar{{Name: "SPLITLET_FAKE_BEHAVIOR", Value: `stdout="line one|line two|line three"`}}}},
		},
	}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = admin.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	var containerID string
	waitFor(t, 60*time.Second, "the pod Running", func() (bool, string) {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil {
			containerID = p.Status.ContainerStatuses[0].ContainerID
		}
		return p.Status.Phase == v1.PodRunning && containerID != "", fmt.Sprintf("phase %q", p.Status.Phase)
	})

	// kubectl logs: the API server dials the node API with its kubelet
	// client certificate, verifying the node's serving certificate.
	logs := func(opts *v1.PodLogOptions) string {
		t.Helper()
		rc, err := admin.CoreV1().Pods(ns).GetLogs(pod.Name, opts).Stream(ctx)
		if err != nil {
			t.Fatalf("GetLogs(%+v): %v", opts, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got, want := logs(&v1.PodLogOptions{Container: "app"}), "line one\nline two\nline three\n"; got != want {
		t.Errorf("logs: %q, want %q", got, want)
	}
	two := int64(2)
	if got, want := logs(&v1.PodLogOptions{Container: "app", TailLines: &two}), "line two\nline three\n"; got != want {
		t.Errorf("logs --tail=2: %q, want %q", got, want)
	}

	// kubectl logs -f --tail=1: the last line, then what the container
	// writes next, while the stream stays open. The runtime's log file is
	// appended to as the runtime would.
	followCtx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	one := int64(1)
	rc, err := admin.CoreV1().Pods(ns).GetLogs(pod.Name, &v1.PodLogOptions{Container: "app", Follow: true, TailLines: &one}).Stream(followCtx)
	if err != nil {
		t.Fatalf("GetLogs follow: %v", err)
	}
	defer rc.Close()
	lines := bufio.NewReader(rc)
	readLine := func(want string) {
		t.Helper()
		got, err := lines.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("followed log: read %q, %v; want %q", got, err, want)
		}
	}
	readLine("line three\n")
	_, id, _ := strings.Cut(containerID, "://")
	st, err := s.cri.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatal(err)
	}
	appendCRILog(t, st.GetStatus().GetLogPath(), "line four")
	readLine("line four\n")
	stopFollow()

	// Straight to the node API: who may call it.
	reader := serviceAccountToken(t, admin, ns, "node-log-reader",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/log"}, Verbs: []string{"get"}})
	adminToken := bearerToken(t, os.Getenv(kubeconfigEnv))
	caPEM, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	apiClientCert, err := tls.LoadX509KeyPair(filepath.Join(pki, "kubelet-client.crt"), filepath.Join(pki, "kubelet-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	logPath := fmt.Sprintf("/containerLogs/%s/%s/app", ns, pod.Name)
	for _, tc := range []struct {
		desc     string
		path     string
		token    string
		cert     *tls.Certificate
		want     int
		wantBody string
	}{
		{desc: "no credentials: 401", path: logPath, want: 401, wantBody: "Unauthorized"},
		{desc: "a token the API server does not know: 401", path: logPath, token: "not-a-token", want: 401},
		{desc: "nodes/log but not nodes/proxy: 403", path: logPath, token: reader, want: 403,
			wantBody: "Forbidden (user=system:serviceaccount:default:node-log-reader, verb=get, resource=nodes, subresource(s)=[proxy])"},
		{desc: "nodes/log opens /logs/: the node's /var/log/, listed", path: "/logs/", token: reader, want: 200, wantBody: "<pre>"},
		{desc: "the admin's token: the log", path: logPath + "?tailLines=1", token: adminToken, want: 200, wantBody: "line four\n"},
		{desc: "the API server's kubelet client certificate: sync's pods", path: "/pods", cert: &apiClientCert, want: 200,
			wantBody: `"name":"` + pod.Name + `"`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			tlsConfig := &tls.Config{RootCAs: roots}
			if tc.cert != nil {
				tlsConfig.Certificates = []tls.Certificate{*tc.cert}
			}
			tr := &http.Transport{TLSClientConfig: tlsConfig}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.wantBody) {
				t.Fatalf("GET %s: %d %q, want %d with %q", tc.path, resp.StatusCode, body, tc.want, tc.wantBody)
			}
		})
	}
}

// nodeAPIStack starts a node (nodeStackOn runtimeEndpoint) whose sync serves
// the node API on 127.0.0.1 with hack/apiserver.sh's certificates (pki),
// grants the API server's kubelet client what kubeadm grants it, and
// returns once the Node carries the node API's port and an InternalIP.
func nodeAPIStack(t *testing.T, pki, runtimeEndpoint string) (kubernetes.Interface, *stack, string, int32) {
	t.Helper()
	return nodeAPIStackAt(t, pki, runtimeEndpoint, "127.0.0.1")
}

// nodeAPIStackAt is nodeAPIStack with the node API on ip, the Node's
// InternalIP, and sync's further flags syncArgs.
func nodeAPIStackAt(t *testing.T, pki, runtimeEndpoint, ip string, syncArgs ...string) (kubernetes.Interface, *stack, string, int32) {
	t.Helper()
	admin, _ := kubeClient(t)
	bindClusterRole(t, admin, "splitlet-test-kubelet-api-admin", "system:kubelet-api-admin",
		rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: kubeletClientUser})
	client, s, node := nodeStackOn(t, runtimeEndpoint, append([]string{
		"--node-api-addr=" + net.JoinHostPort(ip, "0"),
		"--node-ip=" + ip,
		"--client-ca-file=" + filepath.Join(pki, "ca.crt"),
		"--node-api-tls-cert-file=" + filepath.Join(pki, "node-api.crt"),
		"--node-api-tls-private-key-file=" + filepath.Join(pki, "node-api.key"),
	}, syncArgs...)...)
	var port int32
	waitFor(t, 30*time.Second, "the Node carrying the node API's port and an InternalIP", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		port = n.Status.DaemonEndpoints.KubeletEndpoint.Port
		internal := false
		for _, a := range n.Status.Addresses {
			internal = internal || a.Type == v1.NodeInternalIP && a.Address == ip
		}
		return port > 0 && internal, fmt.Sprintf("port %d, addresses %v", port, n.Status.Addresses)
	})
	return client, s, node, port
}

// appendCRILog writes one stdout line to a CRI log file, as the runtime does.
func appendCRILog(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s stdout F %s\n", time.Now().UTC().Format(time.RFC3339Nano), line); err != nil {
		t.Fatal(err)
	}
}

// bindClusterRole binds the ClusterRole role to subject.
func bindClusterRole(t *testing.T, client kubernetes.Interface, name, role string, subject rbacv1.Subject) {
	t.Helper()
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(t.Context(), b, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// serviceAccountToken creates the service account name in ns, allowed rule
// cluster-wide, and returns a token for it.
func serviceAccountToken(t *testing.T, client kubernetes.Interface, ns, name string, rule rbacv1.PolicyRule) string {
	t.Helper()
	ctx := t.Context()
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "splitlet-test-" + name}, Rules: []rbacv1.PolicyRule{rule}}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	bindClusterRole(t, client, role.Name, role.Name, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns})
	tr, err := client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// bearerToken is the token of a kubeconfig's user.
func bearerToken(t *testing.T, kubeconfig string) string {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil || rc.BearerToken == "" {
		t.Fatalf("token of %s: %v", kubeconfig, err)
	}
	return rc.BearerToken
}
