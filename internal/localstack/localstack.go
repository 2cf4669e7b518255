// Package localstack is `make run`: the local stack of the README's
// quickstart. It starts the three processes with package stack, applies the
// example pods through splitctl (the path a user takes), waits until they
// run, prints what to try next, and then either returns leaving the stack
// running (detach), stops it (smoke, for CI) or stays until interrupted,
// restarting any process that dies meanwhile (stack.Supervise).
//
// The gateway's default backend is `fake`, the in-memory CRI runtime built
// into it; with a RuntimeEndpoint the gateway forwards to a real runtime
// (containerd), and stopping removes the example pods from it first, since
// sync — like the kubelet — leaves running pods alone when it exits.
package localstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/stack"
)

// Config is what `make run` passes on.
type Config struct {
	BinDir      string // splitlet binaries and splitctl
	Dir         string // state, sockets and logs
	ExamplesDir string // pods applied (*.yaml) and static pods (static/*.yaml)
	// RuntimeEndpoint selects the gateway's cri backend; empty runs fake.
	RuntimeEndpoint    string
	SyncAddr           string
	AdmissionAddr      string
	GatewayMetricsAddr string
	NodeName           string
	NodeIP             string
	// Timeout bounds the wait for the example pods.
	Timeout time.Duration
	Detach  bool
	Smoke   bool
	// CrictlPath is shown in the hints when set.
	CrictlPath string
	Out        io.Writer // the pod listing and the hints
	Logger     *zap.Logger
}

// ErrSmoke is returned when a smoke run found a step that did not work.
var ErrSmoke = errors.New("smoke: FAILED")

// skipApply are example files that are not applied: busybox.yaml is the
// compose stack's pod, which the others cover.
var skipApply = map[string]bool{"busybox.yaml": true}

// Run starts the stack and applies the examples; see the package comment
// for what happens after. ctx ends the foreground wait.
func Run(ctx context.Context, cfg Config) (retErr error) {
	log := cfg.Logger
	if running := stack.Running(cfg.Dir); len(running) > 0 {
		return fmt.Errorf("a stack already runs under %s (%v); stop it first: make stop", cfg.Dir, running)
	}
	if err := freshDir(cfg.Dir); err != nil {
		return err
	}
	manifests := filepath.Join(cfg.Dir, "manifests")
	if err := copyStatic(filepath.Join(cfg.ExamplesDir, "static"), manifests); err != nil {
		return err
	}
	syncArgs := []string{}
	if cfg.NodeIP != "" {
		// Host-network pods report the node's IPs as their own.
		syncArgs = append(syncArgs, "--node-ip="+cfg.NodeIP)
	}
	s, err := stack.Start(ctx, stack.Config{
		BinDir:             cfg.BinDir,
		Dir:                cfg.Dir,
		NodeName:           cfg.NodeName,
		RuntimeEndpoint:    cfg.RuntimeEndpoint,
		GatewayMetricsAddr: cfg.GatewayMetricsAddr,
		GatewayArgs:        []string{"--log-format=json"},
		AdmissionAddr:      cfg.AdmissionAddr,
		SyncAddr:           cfg.SyncAddr,
		ManifestDir:        manifests,
		SyncArgs:           syncArgs,
		Logger:             log,
	})
	if err != nil {
		return err
	}
	detached := false
	defer func() {
		if detached {
			return
		}
		if cfg.RuntimeEndpoint != "" {
			drain(cfg, splitctlFor(cfg, s.SyncURL(), s.Token), "unix://"+s.GatewaySocket, manifests)
		}
		s.Stop()
		log.Info("stopped the stack")
		if retErr != nil {
			log.Error("failed; logs are in " + cfg.Dir)
		}
	}()
	if err := writeEnv(cfg.Dir, s, cfg.RuntimeEndpoint); err != nil {
		return err
	}

	ctl := splitctlFor(cfg, s.SyncURL(), s.Token)
	files, err := exampleFiles(cfg.ExamplesDir)
	if err != nil {
		return err
	}
	backend := "fake"
	if cfg.RuntimeEndpoint != "" {
		backend = "cri"
	}
	log.Info("splitctl apply --wait", zap.Strings("files", files), zap.String("backend", backend))
	smokeOK := true
	args := []string{"apply", "--wait", "--timeout=" + cfg.Timeout.String()}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	if out, err := ctl.run(ctx, args...); err != nil {
		smokeOK = false
		log.Error("the example pods did not all reach Running", zap.Error(err), zap.String("output", out))
	}
	// The static pod comes from the manifest directory, not from apply.
	if err := waitStatic(ctx, ctl, 10*time.Second); err != nil {
		smokeOK = false
		log.Error("the static pod from examples/static/ never appeared", zap.Error(err))
	}
	listing, _ := ctl.run(ctx, "get", "pods", "-o", "wide")
	fmt.Fprintf(cfg.Out, "\n%s\n", listing)

	if cfg.Smoke {
		if !smokeOK {
			return ErrSmoke
		}
		log.Info("smoke: OK")
		return nil
	}
	printHints(cfg, s, backend)
	if cfg.Detach {
		detached = true
		return nil
	}
	// Foreground: until interrupted. A process that dies is started again
	// after a back-off, as systemd or the kubelet would restart it; sync
	// finds its pods in its store.
	s.Supervise(ctx, stack.DefaultBackoff, func(r stack.Restart) {
		if r.Err != nil {
			log.Error("restarted a process that ended; it is not ready", zap.String("process", r.Process.Name),
				zap.Duration("after", r.Delay), zap.String("exit", r.Exit.Error()), zap.Error(r.Err))
			return
		}
		log.Warn("restarted a process that ended", zap.String("process", r.Process.Name),
			zap.Duration("after", r.Delay), zap.String("exit", r.Exit.Error()))
	})
	fmt.Fprintln(cfg.Out)
	return nil
}

// Stop stops a stack left running by a detached Run.
func Stop(cfg Config) error {
	backend, _ := os.ReadFile(filepath.Join(cfg.Dir, "backend"))
	if server := envValue(cfg.Dir, "SPLITLET_SERVER"); strings.TrimSpace(string(backend)) == "cri" && server != "" &&
		stack.Running(cfg.Dir)["sync"] != 0 {
		drain(cfg, splitctlFor(cfg, server, envValue(cfg.Dir, "SPLITLET_TOKEN")), envValue(cfg.Dir, "CONTAINER_RUNTIME_ENDPOINT"), filepath.Join(cfg.Dir, "manifests"))
	}
	stopped, err := stack.StopDetached(cfg.Dir, stack.DefaultStopGrace)
	if err != nil {
		return err
	}
	if len(stopped) == 0 {
		cfg.Logger.Info("nothing was running under " + cfg.Dir)
	}
	for _, name := range stopped {
		cfg.Logger.Info("stopped splitlet-" + name)
	}
	return nil
}

// Status prints which processes run and the stack's addresses.
func Status(cfg Config) error {
	running := stack.Running(cfg.Dir)
	for _, name := range []string{"gateway", "admission", "sync"} {
		if pid, ok := running[name]; ok {
			fmt.Fprintf(cfg.Out, "splitlet-%s: running (pid %d)\n", name, pid)
		} else {
			fmt.Fprintf(cfg.Out, "splitlet-%s: stopped\n", name)
		}
	}
	if env, err := os.ReadFile(filepath.Join(cfg.Dir, "env")); err == nil {
		_, _ = cfg.Out.Write(env)
	}
	return nil
}

// freshDir empties what a previous run left in dir: the fake backend
// forgets its containers on exit, so pods kept in sync's store would only
// be created again. Only what a run makes is removed, so a dir pointing
// somewhere unexpected loses nothing else.
func freshDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"state", "logs", "manifests", "env", "backend", "admission.yaml", "gateway.sock",
		"gateway.log", "admission.log", "sync.log", "gateway.pid", "admission.pid", "sync.pid"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// copyStatic copies the static pod manifests, so stopping can remove them
// from a real runtime without touching examples/; editing the copy shows
// sync re-reading it.
func copyStatic(from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	matches, err := filepath.Glob(filepath.Join(from, "*.yaml"))
	if err != nil {
		return err
	}
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(m)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func exampleFiles(dir string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range matches {
		if !skipApply[filepath.Base(m)] {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no example pods (*.yaml) in %s", dir)
	}
	return out, nil
}

// writeEnv records the addresses (for `status` and for a shell to source)
// and the backend (for `stop`).
func writeEnv(dir string, s *stack.Stack, endpoint string) error {
	// The env file holds the API token: only its owner reads it.
	if err := os.WriteFile(filepath.Join(dir, "env"), []byte(strings.Join(s.Env(), "\n")+"\n"), 0o600); err != nil {
		return err
	}
	backend := "fake"
	if endpoint != "" {
		backend = "cri"
	}
	return os.WriteFile(filepath.Join(dir, "backend"), []byte(backend+"\n"), 0o644)
}

// envValue reads one variable of the env file a run wrote in dir.
func envValue(dir, key string) string {
	data, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return v
		}
	}
	return ""
}

// splitctl runs the project's CLI against the stack.
type splitctl struct{ bin, server, token string }

func splitctlFor(cfg Config, server, token string) splitctl {
	return splitctl{bin: filepath.Join(cfg.BinDir, "splitctl"), server: server, token: token}
}

func (c splitctl) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"--server=" + c.server}, args...)...)
	// In the environment rather than on the command line, where ps shows it.
	cmd.Env = append(os.Environ(), "SPLITLET_TOKEN="+c.token)
	out, err := cmd.CombinedOutput()
	return strings.TrimRight(string(out), "\n"), err
}

func (c splitctl) podNames(ctx context.Context) ([]string, error) {
	out, err := c.run(ctx, "get", "pods", "-o", "name")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			names = append(names, strings.TrimPrefix(line, "pod/"))
		}
	}
	return names, nil
}

// podUIDs returns the UIDs of the pods sync lists.
func (c splitctl) podUIDs(ctx context.Context) (map[string]bool, error) {
	out, err := c.run(ctx, "get", "pods", "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	var list struct {
		Items []struct {
			Metadata struct {
				UID string `json:"uid"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("splitctl get pods -o json: %w", err)
	}
	uids := map[string]bool{}
	for _, p := range list.Items {
		uids[p.Metadata.UID] = true
	}
	return uids, nil
}

// waitStatic waits until the listing holds the static pod of
// examples/static (its name carries the node name as a suffix).
func waitStatic(ctx context.Context, c splitctl, timeout time.Duration) error {
	return poll(ctx, timeout, func() (bool, error) {
		names, err := c.podNames(ctx)
		if err != nil {
			return false, err
		}
		for _, n := range names {
			if strings.HasPrefix(n, "static-web-") {
				return true, nil
			}
		}
		return false, fmt.Errorf("pods: %v", names)
	})
}

// drain removes the pods from a real runtime before sync stops: static ones
// by removing their manifests, the rest through splitctl delete. A pod
// leaves sync's listing once it is terminated, before housekeeping removes
// its sandboxes and containers (as a kubelet's pod leaves the API server
// before its dead containers are collected), so drain then waits until the
// runtime, read through the gateway, holds nothing of those pods either.
func drain(cfg Config, ctl splitctl, gateway, manifests string) {
	log := cfg.Logger
	log.Info("deleting the pods from the runtime (static ones by removing their manifests)")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	uids, err := ctl.podUIDs(ctx)
	if err != nil {
		log.Warn("listing the pods to drain", zap.Error(err))
	}
	if matches, _ := filepath.Glob(filepath.Join(manifests, "*")); len(matches) > 0 {
		for _, m := range matches {
			_ = os.Remove(m)
		}
	}
	if names, err := ctl.podNames(ctx); err == nil && len(names) > 0 {
		// Static pods answer NotFound here and go away with their manifest.
		_, _ = ctl.run(ctx, append([]string{"delete", "pod", "--wait=false"}, names...)...)
	}
	err = poll(ctx, 30*time.Second, func() (bool, error) {
		names, err := ctl.podNames(ctx)
		if err != nil {
			return false, err
		}
		return len(names) == 0, fmt.Errorf("pods still present: %v", names)
	})
	if err != nil {
		log.Warn("draining the runtime", zap.Error(err))
		return
	}
	if len(uids) == 0 || gateway == "" {
		return
	}
	err = poll(ctx, 30*time.Second, func() (bool, error) {
		left, err := runtimeLeftovers(ctx, gateway, uids)
		if err != nil {
			return false, err
		}
		return len(left) == 0, fmt.Errorf("the runtime still holds %v", left)
	})
	if err != nil {
		log.Warn("draining the runtime", zap.Error(err))
	}
}

// podUIDLabel is the label the kubelet, and sync, put on every sandbox and
// container with the pod's UID.
const podUIDLabel = "io.kubernetes.pod.uid"

// runtimeLeftovers lists the sandboxes and containers of the pods uids that
// the runtime behind the gateway endpoint still holds.
func runtimeLeftovers(ctx context.Context, endpoint string, uids map[string]bool) ([]string, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	cri := runtimeapi.NewRuntimeServiceClient(conn)
	sbs, err := cri.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, err
	}
	ctrs, err := cri.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, err
	}
	var left []string
	for _, sb := range sbs.GetItems() {
		if uids[sb.GetLabels()[podUIDLabel]] {
			left = append(left, "sandbox of "+sb.GetMetadata().GetNamespace()+"/"+sb.GetMetadata().GetName())
		}
	}
	for _, c := range ctrs.GetContainers() {
		if uids[c.GetLabels()[podUIDLabel]] {
			left = append(left, "container "+c.GetMetadata().GetName())
		}
	}
	return left, nil
}

// poll calls cond every 200 ms until it holds or timeout passes, returning
// the last reason it gave.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %v: %w", timeout, why)
		case <-tick.C:
		}
	}
}
