package test

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

// The PodService answers plain gRPC (HTTP/2 cleartext) on the same port.
func TestGRPCProtocol(t *testing.T) {
	s := startStack(t, stackOptions{})
	s.apply(webPod)
	h2c, base, err := s.SyncDial().Client(true)
	if err != nil {
		t.Fatal(err)
	}
	client := podv1connect.NewPodServiceClient(h2c, base, connect.WithGRPC())
	resp, err := client.Get(context.Background(), connect.NewRequest(&podv1.GetRequest{Namespace: "default", Name: "web"}))
	if err != nil {
		t.Fatalf("gRPC Get: %v", err)
	}
	if pod := toPod(t, resp.Msg.GetPod()); pod.Name != "web" {
		t.Errorf("gRPC Get returned pod %q, want web", pod.Name)
	}
	_, err = client.Get(context.Background(), connect.NewRequest(&podv1.GetRequest{Namespace: "default", Name: "absent"}))
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("gRPC Get of an absent pod: %v, want NotFound", err)
	}
}

// /metrics carries the kubelet's metric names once a pod has run.
func TestMetrics(t *testing.T) {
	s := startStack(t, stackOptions{})
	s.apply(webPod)
	s.waitPod("web", 15*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	var body string
	waitFor(t, 5*time.Second, "metrics", func() (bool, string) {
		resp, err := http.Get("http://" + s.addr + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(raw)
		return strings.Contains(body, "kubelet_running_pods 1"), "kubelet_running_pods is not 1"
	})
	want := []string{
		"kubelet_pod_start_duration_seconds_count 1",
		"kubelet_pod_worker_duration_seconds_count{operation_type=\"create\"}",
		`kubelet_running_containers{container_state="running"} 1`,
		"kubelet_pleg_relist_duration_seconds_count",
	}
	if os.Getenv("GOGC") == "" {
		// sync's own garbage collector target when GOGC is not set.
		want = append(want, "go_gc_gogc_percent 200")
	}
	for _, name := range want {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics lacks %q in:\n%s", name, grepLines(body, "kubelet_running"))
		}
	}
}

// Housekeeping kills and removes sync's own orphans (a sandbox sync marked,
// of a pod no source knows) and never touches a pod it did not create, such
// as a kubelet's on the same runtime.
func TestHousekeepingOrphans(t *testing.T) {
	s := startStack(t, stackOptions{})
	ctx := context.Background()
	run := func(uid string, annotations map[string]string) string {
		resp, err := s.cri.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
			Metadata:    &runtimeapi.PodSandboxMetadata{Name: uid, Namespace: "default", Uid: uid},
			Labels:      map[string]string{"io.kubernetes.pod.uid": uid, "io.kubernetes.pod.name": uid, "io.kubernetes.pod.namespace": "default"},
			Annotations: annotations,
		}})
		if err != nil {
			t.Fatalf("RunPodSandbox: %v", err)
		}
		return resp.GetPodSandboxId()
	}
	orphan := run("orphan-uid", map[string]string{"splitlet.dev/managed-by": "splitlet-sync"})
	foreign := run("kubelet-uid", nil)
	waitFor(t, 15*time.Second, "orphan removed", func() (bool, string) {
		for _, sb := range s.sandboxes() {
			if sb.GetId() == orphan {
				return false, "orphan sandbox " + sb.GetState().String()
			}
		}
		return true, ""
	})
	found := false
	for _, sb := range s.sandboxes() {
		if sb.GetId() == foreign {
			found = sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY
		}
	}
	if !found {
		t.Errorf("the foreign pod's sandbox was stopped or removed")
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
