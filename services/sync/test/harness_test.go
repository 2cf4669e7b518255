package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	launcher "github.com/splitlet/splitlet/internal/stack"
	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

// binDir holds the binaries TestMain builds.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "splitlet-sync-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// splitctl too: the exec tests stream through it, as a user does.
	if _, err := launcher.Build(context.Background(), dir, launcher.SplitctlPackage); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir = dir
	return m.Run()
}

// stack is a gateway (fake backend) and sync, and admission when the test
// asks for it, started by the project's one launcher.
type stack struct {
	*launcher.Stack
	t      *testing.T
	dir    string
	addr   string
	client podv1connect.PodServiceClient
	cri    runtimeapi.RuntimeServiceClient
}

type stackOptions struct {
	// backOffBase is sync's hidden crash-loop back-off base.
	backOffBase time.Duration
	manifestDir bool
	// syncArgs are added to sync's command line.
	syncArgs []string
	// admission, when set, starts splitlet-admission with the configuration
	// it returns for a root directory; sync then admits through it.
	admission func(rootDir string) string
	// defaultPolicy runs the gateway with its default policy; otherwise
	// every host path is allowed (--allowed-host-path=/).
	defaultPolicy bool
	// gatewayArgs are added to the gateway's command line.
	gatewayArgs []string
}

// freeAddr returns a loopback address nobody listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := launcher.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func startStack(t *testing.T, opts stackOptions) *stack {
	t.Helper()
	// Not t.TempDir: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "sst")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if opts.backOffBase == 0 {
		opts.backOffBase = time.Second
	}
	cfg := launcher.Config{
		BinDir:      binDir,
		Dir:         dir,
		NodeName:    "node1",
		NoAdmission: opts.admission == nil,
		GatewayArgs: []string{"--allowed-host-path=/", "--log-level=warn"},
		SyncArgs: append([]string{
			"--resync-interval=500ms",
			"--relist-interval=200ms",
			"--crashloop-backoff-base=" + opts.backOffBase.String(),
			"--max-container-restart-period=8s", "--image-pull-backoff-max=8s",
			"--container-gc-period=1s",
			"--log-level=debug",
		}, opts.syncArgs...),
		StopGrace: 10 * time.Second,
	}
	if opts.defaultPolicy {
		cfg.GatewayArgs = []string{"--log-level=warn"}
	}
	cfg.GatewayArgs = append(cfg.GatewayArgs, opts.gatewayArgs...)
	if opts.admission != nil {
		root := filepath.Join(dir, "adm-root")
		if err := os.MkdirAll(root, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg.AdmissionConfig = opts.admission(root)
		cfg.SyncArgs = append(cfg.SyncArgs, "--admission-timeout=1s")
	}
	if opts.manifestDir {
		cfg.ManifestDir = filepath.Join(dir, "manifests")
		if err := os.MkdirAll(cfg.ManifestDir, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg.SyncArgs = append(cfg.SyncArgs, "--file-check-frequency=300ms")
	}
	st, err := launcher.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start the stack: %v", err)
	}
	t.Cleanup(func() {
		st.Stop()
		if t.Failed() {
			for _, p := range st.Processes() {
				t.Logf("last lines of %s:\n%s", p.LogPath, p.Tail(80))
			}
		}
	})
	return &stack{
		Stack:  st,
		t:      t,
		dir:    dir,
		addr:   st.SyncAddr,
		client: st.PodService(),
		cri:    st.CRI(),
	}
}

// splitctl runs the splitctl binary against this stack's sync with stdin,
// and returns its output and exit code.
func (s *stack) splitctl(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "splitctl"), args...)
	cmd.Env = append(os.Environ(), "SPLITLET_SERVER="+s.SyncAddr, "SPLITLET_TOKEN="+s.Token)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	var exit *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &exit) {
		t.Fatalf("splitctl %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

func (s *stack) manifestDir() string { return filepath.Join(s.dir, "manifests") }

// restartSync stops sync with SIGTERM and starts it again on the same state.
func (s *stack) restartSync() {
	s.t.Helper()
	s.Sync.Stop(10 * time.Second)
	if err := s.Sync.Restart(context.Background(), 10*time.Second); err != nil {
		s.t.Fatal(err)
	}
}

// waitFor polls cond until it holds or timeout passes.
var waitFor = launcher.WaitFor

// waitWorkerFinished waits until sync's log says the pod's worker finished
// (terminated, stopped for good): nothing syncs the pod after that.
func (s *stack) waitWorkerFinished(uid string) {
	s.t.Helper()
	waitFor(s.t, 30*time.Second, "the pod worker of "+uid+" to finish", func() (bool, string) {
		data, err := os.ReadFile(s.Sync.LogPath)
		if err != nil {
			return false, err.Error()
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, `"msg":"pod worker finished"`) && strings.Contains(line, `"podUID":"`+uid+`"`) {
				return true, ""
			}
		}
		return false, "not in sync's log"
	})
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
