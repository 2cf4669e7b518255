package compose_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

const (
	// project is the compose project name: its containers, network and
	// volumes are splitlet-e2e_*, apart from a stack started by hand.
	project = "splitlet-e2e"
	// repoRoot is the repository's top, from this package's directory.
	repoRoot = "../../../.."
	// commandTimeout bounds every command the test runs, so that a hung
	// CLI fails the test with its name instead of hitting go test's
	// -timeout, which skips the cleanups that dump and remove the stack.
	commandTimeout = 3 * time.Minute
)

// composeStack is one compose project of docker-compose.yml, driven with
// one compose CLI.
type composeStack struct {
	t    *testing.T
	root string // the repository, absolute
	cli  string // "v1": docker-compose; "v2": docker compose
	env  []string

	syncPort, admissionPort, gatewayMetricsPort string
	token                                       string

	crictl   string // empty: the gateway's policy test instead
	skipSync bool
	keep     bool
	timings  string // a file each phase's duration is appended to, or ""

	phaseStart time.Time
	down       bool   // compose down has run
	podUID     string // the pod's UID once applied, for its cgroups
}

// newComposeStack reads the environment hack/compose-e2e.sh sets and skips
// the test, saying why, when it is not there.
func newComposeStack(t *testing.T) *composeStack {
	t.Helper()
	if os.Getenv("SPLITLET_COMPOSE_E2E") != "1" {
		t.Skip("SPLITLET_COMPOSE_E2E=1 is unset: run make compose-e2e (root), which installs docker.io and docker-compose, " +
			"starts a private dockerd, builds bin/ and the images, and runs this test once per compose CLI")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	s := &composeStack{
		t:                  t,
		root:               root,
		cli:                envOr("DOCKER_COMPOSE_CLI", "v1"),
		syncPort:           envOr("SPLITLET_SYNC_PORT", "7443"),
		admissionPort:      envOr("SPLITLET_ADMISSION_PORT", "7444"),
		gatewayMetricsPort: envOr("SPLITLET_GATEWAY_METRICS_PORT", "9101"),
		skipSync:           os.Getenv("SPLITLET_COMPOSE_SKIP_SYNC") == "1",
		keep:               os.Getenv("SPLITLET_COMPOSE_KEEP") == "1",
		timings:            os.Getenv("SPLITLET_COMPOSE_TIMINGS"),
		phaseStart:         time.Now(),
	}
	if s.cli != "v1" && s.cli != "v2" {
		t.Fatalf("DOCKER_COMPOSE_CLI must be v1 or v2, not %q", s.cli)
	}
	// The token compose hands sync and admission as a secret, so splitctl
	// sends the very same one.
	tokenFile := envOr("SPLITLET_TOKEN_FILE", filepath.Join(root, "_out/compose/api.token"))
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatalf("the API token docker-compose.yml mounts: %v", err)
	}
	s.token = strings.TrimSpace(string(b))
	s.env = append(os.Environ(),
		"SPLITLET_TOKEN_FILE="+tokenFile,
		"SPLITLET_SERVER=http://127.0.0.1:"+s.syncPort,
		"SPLITLET_TOKEN="+s.token)

	switch c := os.Getenv("SPLITLET_CRICTL"); c {
	case "none":
	case "":
		s.crictl, _ = exec.LookPath("crictl")
	default:
		if fi, err := os.Stat(c); err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("SPLITLET_CRICTL=%s is not executable", c)
		}
		s.crictl = c
	}
	return s
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// command runs name with args, env and stdin, and returns its stdout and
// stderr; its error names the command and carries stderr, and wraps the
// *exec.ExitError for the exit code.
func command(ctx context.Context, env []string, stdin, name string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	// A child that keeps the pipes open (a compose CLI's helper) must not
	// hold the test past the timeout.
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return o.String(), e.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(e.String()))
	}
	return o.String(), e.String(), nil
}

// compose runs the compose CLI on docker-compose.yml as project.
func (s *composeStack) compose(ctx context.Context, args ...string) (string, error) {
	name, pre := "docker-compose", []string(nil)
	if s.cli == "v2" {
		name, pre = "docker", []string{"compose"}
	}
	args = append(append(pre, "-p", project, "-f", filepath.Join(s.root, "docker-compose.yml")), args...)
	out, _, err := command(ctx, s.env, "", name, args...)
	return out, err
}

func (s *composeStack) mustCompose(args ...string) string {
	s.t.Helper()
	out, err := s.compose(s.t.Context(), args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// splitctl runs bin/splitctl, as a user on the host would, with env.
func (s *composeStack) splitctl(env []string, stdin string, args ...string) (stdout, stderr string, err error) {
	return command(s.t.Context(), env, stdin, filepath.Join(s.root, "bin/splitctl"), args...)
}

func (s *composeStack) mustSplitctl(args ...string) string {
	s.t.Helper()
	out, _, err := s.splitctl(s.env, "", args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// containerdID is the containerd service's container.
func (s *composeStack) containerdID() (string, error) {
	out, err := s.compose(s.t.Context(), "ps", "-q", "containerd")
	if err != nil {
		return "", err
	}
	if id := strings.TrimSpace(out); id != "" {
		return id, nil
	}
	return "", fmt.Errorf("compose ps -q containerd: no container")
}

// ctr runs ctr inside the containerd service, in the CRI's k8s.io namespace.
func (s *composeStack) ctr(args ...string) (string, error) {
	id, err := s.containerdID()
	if err != nil {
		return "", err
	}
	out, _, err := command(s.t.Context(), s.env, "", "docker",
		append([]string{"exec", id, "ctr", "--address", "/run/containerd/containerd.sock", "-n", "k8s.io"}, args...)...)
	return out, err
}

// up starts the stack and registers its removal: on failure compose ps and
// the services' logs go to the test log first, and SPLITLET_COMPOSE_KEEP=1
// leaves a failed stack running.
func (s *composeStack) up(services ...string) {
	s.t.Cleanup(func() {
		if s.down {
			return
		}
		ctx := context.Background() // t.Context() is done by now
		if s.t.Failed() {
			ps, err := s.compose(ctx, "ps")
			s.t.Logf("---- compose ps ----\n%s%v", ps, orNil(err))
			logs, err := s.compose(ctx, "logs", "--no-color", "--tail=100")
			s.t.Logf("---- compose logs (last 100 lines each) ----\n%s%v", logs, orNil(err))
			if s.keep {
				s.t.Logf("SPLITLET_COMPOSE_KEEP=1: kept the stack (project %s) on %s", project, os.Getenv("DOCKER_HOST"))
				return
			}
		}
		if _, err := s.compose(ctx, "down", "-v", "--remove-orphans"); err != nil {
			s.t.Errorf("compose down: %v", err)
		}
		s.removePodCgroups()
	})
	s.mustCompose(append([]string{"up", "-d"}, services...)...)
}

// tearDown is compose down at the end of a passing run, as a step of its
// own: its failure fails the test.
func (s *composeStack) tearDown() {
	s.t.Helper()
	s.mustCompose("down", "-v", "--remove-orphans")
	s.down = true
	s.removePodCgroups()
}

func orNil(err error) any {
	if err == nil {
		return ""
	}
	return err
}

// removePodCgroups removes the cgroups runc made for the pod on the host
// (the containerd service bind-mounts /sys/fs/cgroup): nothing removes the
// pod-level cgroup today, neither on delete nor when compose down kills
// the pod. Removing a directory of cgroupfs only works on an empty cgroup,
// so a live one is never touched.
func (s *composeStack) removePodCgroups() {
	if s.podUID == "" {
		return
	}
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	var dirs []string
	for _, r := range roots {
		_ = filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && strings.Contains(p, "/pod"+s.podUID) {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	if len(dirs) == 0 {
		return
	}
	// Children before their parents.
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	s.t.Logf("removing %d cgroup directories left for pod UID %s", len(dirs), s.podUID)
	for _, d := range dirs {
		_ = os.Remove(d)
	}
}

// phase records how long the step that just ended took: in the test log,
// and in SPLITLET_COMPOSE_TIMINGS for the script's summary.
func (s *composeStack) phase(name string) {
	s.t.Helper()
	line := fmt.Sprintf("%-32s %4ds", "compose "+s.cli+" "+name, int(time.Since(s.phaseStart).Round(time.Second).Seconds()))
	s.phaseStart = time.Now()
	s.t.Logf("phase: %s", line)
	if s.timings == "" {
		return
	}
	f, err := os.OpenFile(s.timings, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		s.t.Fatal(err)
	}
}

// httpOK is what curl -sf checks: the URL answers below 400.
func httpOK(url string) (bool, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return false, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode < 400, resp.Status
}
