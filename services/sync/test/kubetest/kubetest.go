// Package kubetest holds what the tests that drive a real control plane
// (services/sync/test/cluster, daemonset, kubelet) share: clients of the API
// server and of a containerd, kubectl as a user runs it, and the wait for a
// Node to turn Ready.
package kubetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/stack"
)

// Client is a clientset authenticated as kubeconfig says.
func Client(t testing.TB, kubeconfig string) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// CRI is a client of the CRI runtime service at endpoint (a containerd,
// not the gateway, when what the runtime holds is the question), closed
// when the test ends.
func CRI(t testing.TB, endpoint string) runtimeapi.RuntimeServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}

// Kubectl runs the kubectl binary with kubeconfig, stdin and args, as a
// user would; it fails the test when kubectl fails and logs its output.
func Kubectl(t testing.TB, kubectl, kubeconfig, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), kubectl, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("kubectl %s\n%s", strings.Join(args, " "), strings.TrimSpace(out.String()))
	return out.String()
}

// WaitNodeReady waits until Node name's Ready condition is True.
func WaitNodeReady(t testing.TB, client kubernetes.Interface, name string, timeout time.Duration) {
	t.Helper()
	stack.WaitFor(t, timeout, "Node "+name+" Ready", func() (bool, string) {
		n, err := client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == v1.NodeReady {
				return cond.Status == v1.ConditionTrue, fmt.Sprintf("Ready=%s: %s %s", cond.Status, cond.Reason, cond.Message)
			}
		}
		return false, "no Ready condition yet"
	})
}

// TempDir makes a directory in parent (os.TempDir when "") named after
// prefix and removes it when the test ends, unless SPLITLET_E2E_KEEP is set
// (the e2e scripts' switch to keep every log), in which case it says where
// it is. Not t.TempDir: its long names break unix socket paths (108 bytes)
// and it cannot be kept.
func TempDir(t testing.TB, parent, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if os.Getenv("SPLITLET_E2E_KEEP") == "" {
			_ = os.RemoveAll(dir)
		} else {
			t.Logf("kept %s", dir)
		}
	})
	return dir
}
