// Package test runs the splitlet-admission binary as a process: built by the
// test, started with a configuration file, called over gRPC with grpc-go (as
// a gRPC client in another language would), and stopped with SIGTERM.
package test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"

	admissionv1 "github.com/splitlet/splitlet/proto/splitlet/admission/v1"
	"github.com/splitlet/splitlet/services/admission/internal/testfixture"
)

const (
	admissionPkg = "github.com/splitlet/splitlet/services/admission/cmd/splitlet-admission"
	allowlistPkg = "github.com/splitlet/splitlet/services/admission/cmd/splitlet-plugin-image-allowlist"
)

var (
	binDir    string
	buildMu   sync.Mutex
	buildErrs = map[string]error{}
	built     = map[string]string{}
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "splitlet-admission-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// binary builds pkg once per test run and returns the binary's path.
func binary(t *testing.T, pkg string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("process tests build the binaries and need the go toolchain in PATH: " + err.Error())
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if path, ok := built[pkg]; ok {
		return path
	}
	if err := buildErrs[pkg]; err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(binDir, filepath.Base(pkg))
	// Without cgo, as `make build` builds them: the packages compiled for
	// it are reused rather than compiled once more with cgo.
	cmd := exec.Command(goBin, "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		buildErrs[pkg] = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		t.Fatal(buildErrs[pkg])
	}
	built[pkg] = out
	return out
}

// nodeConfig is the fixture node (2 cpu, 1Gi, 10 pods, zone=a) as a
// configuration file states it. No hard eviction thresholds: this machine's
// real memory or disk must not put the test node under pressure.
func nodeConfig(t *testing.T, extra string) string {
	return fmt.Sprintf(`
node:
  name: %s
  rootDir: %s
  labels: {zone: a}
  capacity: {cpu: "2", memory: 1Gi, pods: "10"}
eviction:
  hard: {}
  evaluationInterval: 1s
%s`, testfixture.NodeName, t.TempDir(), extra)
}

// process is a running splitlet-admission.
type process struct {
	cmd    *exec.Cmd
	addr   string
	stderr *logBuffer
	done   chan error
}

// start runs the binary with the configuration and waits for its "serving"
// log line, which carries the address it listens on (port 0 is chosen by
// the kernel, so parallel runs do not collide).
func start(t *testing.T, configYAML string, args ...string) *process {
	t.Helper()
	bin := binary(t, admissionPkg)
	cfgPath := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(cfgPath, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	tokenPath := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenPath, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--config", cfgPath, "--listen", "127.0.0.1:0", "--listen-token-file", tokenPath, "--log-level", "debug"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, stderr: &logBuffer{}, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.stderr.add(line)
			var entry struct {
				Msg     string `json:"msg"`
				Address string `json:"address"`
			}
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "serving" {
				addr <- entry.Address
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("splitlet-admission stderr:\n%s", p.stderr)
		}
	})
	select {
	case p.addr = <-addr:
	case err := <-p.done:
		p.done <- err
		t.Fatalf("splitlet-admission exited before serving: %v\n%s", err, p.stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("splitlet-admission did not log its address\n%s", p.stderr)
	}
	return p
}

// stop sends SIGTERM and returns the exit error.
func (p *process) stop(t *testing.T) error {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("splitlet-admission did not stop on SIGTERM\n%s", p.stderr)
		return nil
	}
}

// testToken is the bearer token start gives admission's --listen-token-file.
const testToken = "process-test-token"

// bearerToken sends a token on every call; without TLS, as admission
// listens on loopback in these tests.
type bearerToken string

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearerToken) RequireTransportSecurity() bool { return false }

// dial connects with the token start configured.
func (p *process) dial(t *testing.T) *grpc.ClientConn { return p.dialAs(t, testToken) }

// dialAs connects sending token ("" sends none).
func (p *process) dialAs(t *testing.T, token string) *grpc.ClientConn {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearerToken(token)))
	}
	conn, err := grpc.NewClient(p.addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(l string) {
	b.mu.Lock()
	b.lines = append(b.lines, l)
	b.mu.Unlock()
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

func encode(t *testing.T, pods ...*v1.Pod) [][]byte {
	t.Helper()
	var out [][]byte
	for _, p := range pods {
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// Admission on TCP requires its token: a call without it, or with another,
// is Unauthenticated and decides nothing; gRPC health needs none.
func TestProcessRefusesUnauthenticatedCalls(t *testing.T) {
	p := start(t, nodeConfig(t, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, token := range []string{"", "not-" + testToken} {
		conn := p.dialAs(t, token)
		_, err := admissionv1.NewAdmissionServiceClient(conn).Admit(ctx, &admissionv1.AdmitRequest{})
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("Admit with token %q: %v, want Unauthenticated", token, err)
		}
		health, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil || health.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health without a valid token: %v, %v", health, err)
		}
	}
	// /metrics needs no token either, and shows no decision was made.
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "admission_admit_total{") && !strings.HasSuffix(line, " 0") {
			t.Errorf("an unauthenticated call was decided: %s", line)
		}
	}
}

func TestProcessAdmitOverGRPC(t *testing.T) {
	p := start(t, nodeConfig(t, ""))
	conn := p.dial(t)
	client := admissionv1.NewAdmissionServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	health, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "splitlet.admission.v1.AdmissionService"})
	if err != nil || health.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v; want SERVING", health, err)
	}

	tp := testfixture.Pod
	tests := []struct {
		desc        string
		pod         *v1.Pod
		active      []*v1.Pod
		wantAdmit   bool
		wantReason  string
		wantVictims []string
	}{
		{desc: "fits", pod: tp("web", "500m", "256Mi"), active: []*v1.Pod{tp("db", "1", "512Mi")}, wantAdmit: true},
		{desc: "more memory than the configured capacity", pod: tp("big", "100m", "2Gi"), wantReason: "OutOfmemory"},
		{
			desc:       "node selector mismatch",
			pod:        testfixture.WithNodeSelector(tp("web", "", ""), map[string]string{"zone": "b"}),
			wantReason: "NodeAffinity",
		},
		{
			desc: "critical pod preempts the BestEffort pod", pod: testfixture.Critical(tp("dns", "", "")),
			active: testfixture.FullOfPods(), wantReason: "OutOfpods", wantVictims: []string{"besteffort"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			resp, err := client.Admit(ctx, &admissionv1.AdmitRequest{Pod: encode(t, tc.pod)[0], ActivePods: encode(t, tc.active...)})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Admit != tc.wantAdmit || resp.Reason != tc.wantReason {
				t.Fatalf("admit %v reason %q (%s), want %v %q", resp.Admit, resp.Reason, resp.Message, tc.wantAdmit, tc.wantReason)
			}
			var victims []string
			for _, v := range resp.Victims {
				victims = append(victims, v.Name)
			}
			if strings.Join(victims, ",") != strings.Join(tc.wantVictims, ",") {
				t.Errorf("victims %v, want %v", victims, tc.wantVictims)
			}
		})
	}

	_, err = client.Admit(ctx, &admissionv1.AdmitRequest{Pod: []byte("garbage")})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "pod") {
		t.Errorf("undecodable pod: %v, want InvalidArgument naming pod", err)
	}

	nodeResp, err := client.GetNode(ctx, &admissionv1.GetNodeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	node := &v1.Node{}
	if err := node.Unmarshal(nodeResp.Node); err != nil {
		t.Fatal(err)
	}
	mem := node.Status.Allocatable[v1.ResourceMemory]
	if node.Name != testfixture.NodeName || mem.String() != "1Gi" {
		t.Errorf("node %q allocatable memory %s, want %q 1Gi", node.Name, mem.String(), testfixture.NodeName)
	}

	// A watcher connected at shutdown is told to go elsewhere, and the
	// process exits cleanly.
	watch, err := client.WatchEvictions(ctx, &admissionv1.WatchEvictionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Header(); err != nil {
		t.Fatalf("watch headers: %v", err)
	}
	if err := p.stop(t); err != nil {
		t.Errorf("exit after SIGTERM: %v, want status 0", err)
	}
	if _, err := watch.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("watch ended with %v, want Unavailable", err)
	}
}

func TestProcessBadConfigExitsWithStatus2(t *testing.T) {
	bin := binary(t, admissionPkg)
	cfgPath := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(cfgPath, []byte("eviction: {hard: {memory.available: lots}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--config", cfgPath).CombinedOutput()
	var exit *exec.ExitError
	if !errorsAs(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit %v, want status 2; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), `eviction.hard["memory.available"]`) {
		t.Errorf("output does not name the field:\n%s", out)
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// The example image allow-list plugin runs in the chain after the built-in
// handlers, as a child process started by splitlet-admission.
func TestProcessWithAllowlistPlugin(t *testing.T) {
	plugin := binary(t, allowlistPkg)
	data, err := os.ReadFile(plugin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	pluginsPath := filepath.Join(t.TempDir(), "plugins.yaml")
	pluginsYAML := fmt.Sprintf(`plugins:
- name: image-allowlist
  path: %s
  sha256: %s
  failurePolicy: Fail
  timeout: 5s
  env:
    SPLITLET_IMAGE_ALLOWLIST: registry.local/
`, plugin, hex.EncodeToString(sum[:]))
	if err := os.WriteFile(pluginsPath, []byte(pluginsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, nodeConfig(t, "pluginsConfig: "+pluginsPath+"\n"))
	client := admissionv1.NewAdmissionServiceClient(p.dial(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tests := []struct {
		desc       string
		pod        *v1.Pod
		wantAdmit  bool
		wantReason string
		wantInMsg  string
	}{
		{desc: "allowed image", pod: testfixture.WithImage(testfixture.Pod("ok", "", ""), "registry.local/app:1"), wantAdmit: true},
		{
			desc: "image from another registry", pod: testfixture.WithImage(testfixture.Pod("bad", "", ""), "docker.io/evil:latest"),
			wantReason: "ImageNotAllowed", wantInMsg: "docker.io/evil:latest",
		},
		{
			desc:       "built-in handlers run first",
			pod:        testfixture.WithImage(testfixture.Pod("big", "", "8Gi"), "docker.io/evil:latest"),
			wantReason: "OutOfmemory",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			resp, err := client.Admit(ctx, &admissionv1.AdmitRequest{Pod: encode(t, tc.pod)[0]})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Admit != tc.wantAdmit || resp.Reason != tc.wantReason {
				t.Fatalf("admit %v reason %q (%s), want %v %q", resp.Admit, resp.Reason, resp.Message, tc.wantAdmit, tc.wantReason)
			}
			if !strings.Contains(resp.Message, tc.wantInMsg) {
				t.Errorf("message %q does not contain %q", resp.Message, tc.wantInMsg)
			}
		})
	}
	if err := p.stop(t); err != nil {
		t.Errorf("exit after SIGTERM: %v, want status 0", err)
	}
}

// A plugin binary whose checksum differs from the configured one keeps the
// process from starting, with an error naming the plugin.
func TestProcessRefusesChangedPlugin(t *testing.T) {
	plugin := binary(t, allowlistPkg)
	pluginsPath := filepath.Join(t.TempDir(), "plugins.yaml")
	pluginsYAML := fmt.Sprintf("plugins:\n- name: image-allowlist\n  path: %s\n  sha256: %s\n", plugin, strings.Repeat("0", 64))
	if err := os.WriteFile(pluginsPath, []byte(pluginsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(cfgPath, []byte(nodeConfig(t, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t, admissionPkg), "--config", cfgPath, "--listen", "unix://"+filepath.Join(t.TempDir(), "admission.sock"), "--plugins-config", pluginsPath)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errorsAs(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "image-allowlist") || !strings.Contains(string(out), "sha256") {
		t.Errorf("output does not explain the refusal:\n%s", out)
	}
}
