package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
	"github.com/splitlet/splitlet/services/sync/internal/testbin"
)

// binDir holds the binaries TestMain builds.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := testbin.Build("splitlet-sync-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	return m.Run()
}

// stack is one gateway and one sync process.
type stack struct {
	t        *testing.T
	dir      string
	sock     string
	addr     string
	syncArgs []string
	gw, sync *exec.Cmd
	syncLog  *os.File
	client   podv1connect.PodServiceClient
	cri      runtimeapi.RuntimeServiceClient
}

type stackOptions struct {
	// backOffBase is sync's hidden crash-loop back-off base.
	backOffBase time.Duration
	manifestDir bool
	// syncArgs are added to sync's command line.
	syncArgs []string
}

// freeAddr returns a loopback address nobody listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startStack(t *testing.T, opts stackOptions) *stack {
	t.Helper()
	// Not t.TempDir: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "sst")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := &stack{t: t, dir: dir, sock: filepath.Join(dir, "gw.sock"), addr: freeAddr(t)}
	if opts.backOffBase == 0 {
		opts.backOffBase = time.Second
	}

	gwLog, err := os.Create(filepath.Join(dir, "gateway.log"))
	if err != nil {
		t.Fatal(err)
	}
	s.gw = exec.Command(filepath.Join(binDir, "splitlet-gateway"), "--backend=fake", "--socket="+s.sock,
		"--metrics-addr=", "--allowed-host-path=/", "--log-level=warn")
	s.gw.Stdout, s.gw.Stderr = gwLog, gwLog
	if err := s.gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(s.gw) })

	conn, err := grpc.NewClient("unix://"+s.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	s.cri = runtimeapi.NewRuntimeServiceClient(conn)
	waitFor(t, 10*time.Second, "gateway up", func() (bool, string) {
		_, err := s.cri.Version(context.Background(), &runtimeapi.VersionRequest{})
		return err == nil, fmt.Sprint(err)
	})

	s.syncArgs = []string{
		"--listen=" + s.addr,
		"--runtime-endpoint=unix://" + s.sock,
		"--state-dir=" + filepath.Join(dir, "state"),
		"--pod-logs-root=" + filepath.Join(dir, "logs"),
		"--node-name=node1",
		"--resync-interval=500ms",
		"--relist-interval=200ms",
		"--crashloop-backoff-base=" + opts.backOffBase.String(),
		"--crashloop-backoff-max=8s",
		"--container-gc-period=1s",
		"--log-level=debug",
	}
	if opts.manifestDir {
		if err := os.MkdirAll(s.manifestDir(), 0o755); err != nil {
			t.Fatal(err)
		}
		s.syncArgs = append(s.syncArgs, "--manifest-dir="+s.manifestDir(), "--file-check-frequency=300ms")
	}
	s.syncArgs = append(s.syncArgs, opts.syncArgs...)
	s.startSync()
	t.Cleanup(func() {
		stop(s.sync)
		if t.Failed() {
			for _, f := range []string{"sync.log", "gateway.log", "admission.log"} {
				data, _ := os.ReadFile(filepath.Join(dir, f))
				lines := strings.Split(string(data), "\n")
				if len(lines) > 80 {
					lines = lines[len(lines)-80:]
				}
				t.Logf("last lines of %s:\n%s", f, strings.Join(lines, "\n"))
			}
		}
	})

	s.client = podv1connect.NewPodServiceClient(http.DefaultClient, "http://"+s.addr)
	return s
}

func (s *stack) manifestDir() string { return filepath.Join(s.dir, "manifests") }

func (s *stack) startSync() {
	t := s.t
	t.Helper()
	f, err := os.OpenFile(filepath.Join(s.dir, "sync.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	s.sync = exec.Command(filepath.Join(binDir, "splitlet-sync"), s.syncArgs...)
	s.sync.Stdout, s.sync.Stderr = f, f
	if err := s.sync.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "sync up", func() (bool, string) {
		resp, err := http.Get("http://" + s.addr + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}

// restartSync stops sync with SIGTERM and starts it again on the same state.
func (s *stack) restartSync() {
	s.t.Helper()
	stop(s.sync)
	s.startSync()
}

// stop ends a process with SIGTERM, then SIGKILL after 10 s.
func stop(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil || cmd.ProcessState != nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// waitFor polls cond every 50 ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last: %s", timeout, what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

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

func (s *stack) apply(manifest string) *podv1.ApplyResponse {
	s.t.Helper()
	resp, err := s.client.Apply(context.Background(), connect.NewRequest(&podv1.ApplyRequest{Manifest: manifest}))
	if err != nil {
		s.t.Fatalf("Apply: %v", err)
	}
	return resp.Msg
}

// get returns the pod, or nil if it does not exist.
func (s *stack) get(name string) *v1.Pod {
	s.t.Helper()
	resp, err := s.client.Get(context.Background(), connect.NewRequest(&podv1.GetRequest{Namespace: "default", Name: name}))
	if connect.CodeOf(err) == connect.CodeNotFound {
		return nil
	}
	if err != nil {
		s.t.Fatalf("Get %s: %v", name, err)
	}
	return toPod(s.t, resp.Msg.GetPod())
}

// waitPod polls Get until cond holds for the pod.
func (s *stack) waitPod(name string, timeout time.Duration, what string, cond func(*v1.Pod) bool) *v1.Pod {
	s.t.Helper()
	var pod *v1.Pod
	waitFor(s.t, timeout, name+": "+what, func() (bool, string) {
		pod = s.get(name)
		if pod == nil {
			return false, "pod not found"
		}
		raw, _ := json.Marshal(pod.Status)
		return cond(pod), string(raw)
	})
	return pod
}

// containers lists the runtime's containers of the pod with their statuses,
// oldest first.
func (s *stack) containers(uid string) []*runtimeapi.ContainerStatus {
	s.t.Helper()
	ctx := context.Background()
	list, err := s.cri.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid},
	}})
	if err != nil {
		s.t.Fatalf("ListContainers: %v", err)
	}
	var out []*runtimeapi.ContainerStatus
	for _, c := range list.GetContainers() {
		st, err := s.cri.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetId()})
		if status.Code(err) == codes.NotFound {
			continue // removed since the listing (garbage collection)
		}
		if err != nil {
			s.t.Fatalf("ContainerStatus: %v", err)
		}
		out = append(out, st.GetStatus())
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].GetCreatedAt() < out[j-1].GetCreatedAt(); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func (s *stack) sandboxes() []*runtimeapi.PodSandbox {
	s.t.Helper()
	list, err := s.cri.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		s.t.Fatalf("ListPodSandbox: %v", err)
	}
	return list.GetItems()
}

func containerStatus(pod *v1.Pod, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
