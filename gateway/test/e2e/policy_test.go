package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestGatewayRefusesPrivilegedSandbox shows the scenario's calls really pass
// through the gateway: a privileged sandbox, which containerd would run, is
// refused by the gateway's policy (hack/e2e.sh starts it without
// --allow-privileged) before it reaches containerd.
func TestGatewayRefusesPrivilegedSandbox(t *testing.T) {
	gateway := os.Getenv("SPLITLET_GATEWAY_ENDPOINT")
	if gateway == "" {
		t.Skip("SPLITLET_GATEWAY_ENDPOINT not set: run `make e2e`, which starts containerd and the gateway")
	}
	conn, err := grpc.NewClient(dialTarget(gateway), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", gateway, err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "privileged", Uid: "uid-privileged", Namespace: "splitlet-e2e"},
		LogDirectory: t.TempDir(),
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			Privileged:       true,
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
		}},
	}})
	if err == nil {
		// Do not leave a privileged pod behind on the test machine.
		id := resp.GetPodSandboxId()
		_, _ = rt.StopPodSandbox(context.Background(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
		_, _ = rt.RemovePodSandbox(context.Background(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
		t.Fatalf("privileged sandbox %s was run; want the gateway's policy to refuse it", id)
	}
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), "privileged") {
		t.Fatalf("RunPodSandbox(privileged) = %v; want PermissionDenied naming the privileged rule", err)
	}
	t.Logf("refused as expected: %v", status.Convert(err).Message())
}
