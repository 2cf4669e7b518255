package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/splitlet/splitlet/internal/apiauth"
	"github.com/splitlet/splitlet/internal/stack"

	"connectrpc.com/connect"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

const (
	defaultBusyboxImage = "docker.io/library/busybox:1.36"
	// namespace holds every pod of these tests, so the CRI checks can tell
	// ours from anything else the runtime runs.
	namespace = "splitlet-e2e"
	// podNamespaceLabel is the label containerd's CRI plugin and the
	// kubelet put on sandboxes and containers (types.KubernetesPodNamespaceLabel).
	podNamespaceLabel = "io.kubernetes.pod.namespace"
)

// env is what the environment gives the tests: a PodService client, and a
// CRI client to the gateway when its socket is known.
type env struct {
	pods    podv1connect.PodServiceClient
	cri     runtimeapi.RuntimeServiceClient // nil without SPLITLET_GATEWAY_ENDPOINT
	image   string
	created []string // pod names applied, for the cleanup
}

// newEnv reads the environment and skips the test when sync's address is
// not there. It registers a cleanup that deletes what the test applied if the
// test did not get to delete it itself.
func newEnv(t *testing.T) *env {
	t.Helper()
	addr := os.Getenv("SPLITLET_SYNC_ADDR")
	if addr == "" {
		t.Skip("SPLITLET_SYNC_ADDR not set: run `make e2e`, which starts containerd, splitlet-gateway and splitlet-sync")
	}
	hc, base, err := apiauth.Dial{Endpoint: addr, Token: os.Getenv("SPLITLET_TOKEN")}.Client(false)
	if err != nil {
		t.Fatalf("SPLITLET_SYNC_ADDR: %v", err)
	}
	e := &env{
		pods:  podv1connect.NewPodServiceClient(hc, base),
		image: os.Getenv("SPLITLET_BUSYBOX_IMAGE"),
	}
	if e.image == "" {
		e.image = defaultBusyboxImage
	}
	if ep := os.Getenv("SPLITLET_GATEWAY_ENDPOINT"); ep != "" {
		target := ep
		if !strings.Contains(target, "://") {
			target = "unix://" + target
		}
		conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatalf("dial gateway %s: %v", ep, err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		e.cri = runtimeapi.NewRuntimeServiceClient(conn)
	}
	t.Cleanup(func() {
		// Best effort: a failed test must not leave running pods to the
		// next one; a passing test has deleted them already.
		for _, name := range e.created {
			_, _ = e.pods.Delete(context.Background(), connect.NewRequest(&podv1.DeleteRequest{Namespace: namespace, Name: name, GracePeriodSeconds: ptr(int64(0))}))
		}
	})
	return e
}

func ptr[T any](v T) *T { return &v }

// apply applies a manifest through the PodService and returns the pods' UIDs
// by name.
func (e *env) apply(t *testing.T, manifest string) map[string]string {
	t.Helper()
	resp, err := e.pods.Apply(context.Background(), connect.NewRequest(&podv1.ApplyRequest{Manifest: manifest}))
	if err != nil {
		t.Fatalf("Apply: %v\n%s", err, manifest)
	}
	uids := map[string]string{}
	for _, p := range resp.Msg.GetPods() {
		if p.GetUid() == "" {
			t.Fatalf("Apply returned %s/%s without a UID", p.GetNamespace(), p.GetName())
		}
		uids[p.GetName()] = p.GetUid()
		e.created = append(e.created, p.GetName())
	}
	return uids
}

// get returns the pod, or nil when sync does not know it.
func (e *env) get(t *testing.T, name string) *v1.Pod {
	t.Helper()
	resp, err := e.pods.Get(context.Background(), connect.NewRequest(&podv1.GetRequest{Namespace: namespace, Name: name}))
	if connect.CodeOf(err) == connect.CodeNotFound {
		return nil
	}
	if err != nil {
		t.Fatalf("Get %s: %v", name, err)
	}
	return toPod(t, resp.Msg.GetPod())
}

// waitPod polls the pod until cond holds and returns it; on timeout the
// failure shows the last status seen.
func (e *env) waitPod(t *testing.T, name string, timeout time.Duration, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	waitFor(t, timeout, name+": "+what, func() (bool, string) {
		pod = e.get(t, name)
		if pod == nil {
			return false, "pod not found"
		}
		raw, _ := json.Marshal(pod.Status)
		return cond(pod), string(raw)
	})
	return pod
}

// execSync runs command in a container of the pod through the ExecSync
// RPC (10 s timeout), failing the test when the call itself fails.
func (e *env) execSync(t *testing.T, pod, container string, command ...string) *podv1.ExecSyncResponse {
	t.Helper()
	resp, err := e.pods.ExecSync(context.Background(), connect.NewRequest(&podv1.ExecSyncRequest{
		Namespace: namespace, Name: pod, Container: container, Command: command, TimeoutSeconds: 10,
	}))
	if err != nil {
		t.Fatalf("ExecSync %q in %s/%s: %v", command, pod, container, err)
	}
	return resp.Msg
}

// logs reads a container's log through the Logs RPC to its end (not
// following).
func (e *env) logs(t *testing.T, req *podv1.LogsRequest) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req.Namespace = namespace
	stream, err := e.pods.Logs(ctx, connect.NewRequest(req))
	if err != nil {
		t.Fatalf("Logs %s/%s: %v", req.GetName(), req.GetContainer(), err)
	}
	defer stream.Close()
	var out bytes.Buffer
	for stream.Receive() {
		out.Write(stream.Msg().GetData())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("Logs %s/%s (previous=%v tail=%v): %v", req.GetName(), req.GetContainer(), req.GetPrevious(), req.TailLines, err)
	}
	return out.String()
}

// ourSandboxes lists the runtime's sandboxes of the test namespace, through
// the gateway.
func (e *env) ourSandboxes(t *testing.T) []*runtimeapi.PodSandbox {
	t.Helper()
	list, err := e.cri.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{podNamespaceLabel: namespace},
	}})
	if err != nil {
		t.Fatalf("ListPodSandbox: %v", err)
	}
	return list.GetItems()
}

// ourContainers lists the runtime's containers of the test namespace.
func (e *env) ourContainers(t *testing.T) []*runtimeapi.Container {
	t.Helper()
	list, err := e.cri.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{podNamespaceLabel: namespace},
	}})
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	return list.GetContainers()
}

// criContainer returns the runtime's status of one container instance.
func (e *env) criContainer(t *testing.T, containerID string) *runtimeapi.ContainerStatus {
	t.Helper()
	resp, err := e.cri.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: containerID})
	if err != nil {
		t.Fatalf("ContainerStatus %s: %v", containerID, err)
	}
	return resp.GetStatus()
}

// waitFor polls cond until it holds or timeout passes.
var waitFor = stack.WaitFor

func toPod(t *testing.T, st *structpb.Struct) *v1.Pod {
	t.Helper()
	raw, err := json.Marshal(st.AsMap())
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{}
	if err := json.Unmarshal(raw, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// status returns the named container's status from the pod, init containers
// included, or nil.
func status(pod *v1.Pod, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// runtimeID strips the runtime's scheme from a status containerID
// ("containerd://abc" -> "abc"), as kubecontainer.ParseContainerID does.
func runtimeID(t *testing.T, id string) string {
	t.Helper()
	_, rest, ok := strings.Cut(id, "://")
	if !ok || rest == "" {
		t.Fatalf("containerID %q is not of the form <runtime>://<id>", id)
	}
	return rest
}

// lines splits log output into lines, without the final empty one.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// deletePod starts a graceful deletion and waits until sync forgets the pod.
func (e *env) deletePod(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	_, err := e.pods.Delete(context.Background(), connect.NewRequest(&podv1.DeleteRequest{Namespace: namespace, Name: name}))
	if err != nil {
		t.Fatalf("Delete %s: %v", name, err)
	}
	waitFor(t, timeout, name+" deleted", func() (bool, string) {
		pod := e.get(t, name)
		if pod == nil {
			return true, ""
		}
		return false, fmt.Sprintf("phase %s, deletionTimestamp %v", pod.Status.Phase, pod.DeletionTimestamp)
	})
}
