//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/zap/zaptest"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/stack"
	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"
	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

const (
	namespace = "chaos"
	pluginPkg = "github.com/splitlet/splitlet/services/admission/cmd/splitlet-plugin-image-allowlist"
	// converge bounds each wait for the stack to settle.
	converge = 2 * time.Minute
)

// size is the burst's pod count and the delete's (half of it): def, or
// CHAOS_PODS.
func size(t *testing.T, def int) int {
	if v := os.Getenv("CHAOS_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 {
			t.Fatalf("CHAOS_PODS=%q: want a number of pods, at least 2", v)
		}
		return n
	}
	return def
}

// figures are what the suite reports.
type figures struct {
	pods, deleted, kills, pluginKills, faultsSet    int
	lost, mismatches, duplicates, spurious, orphans int
	// orphanPlugins are plugin processes left running by an admission
	// that was killed.
	orphanPlugins                                  int
	convergeBurst, convergeRestart, convergeDelete time.Duration
	applyRetries, deleteRetries                    atomic.Int64

	// The containerd form's: kills of containerd; after its wipe and
	// reboots the pods that run in a sandbox of before or whose restart
	// count did not go on from before; the dead sandboxes the container
	// GC left.
	containerdKills, reused, countsLost, deadSandboxes int
	convergeWipe                                       time.Duration
	convergeReboots                                    [2]time.Duration
}

func TestChaos(t *testing.T) {
	ctx := context.Background()
	// On containerd (hack/chaos-containerd.sh): a smaller burst, the
	// runtime's own process among the victims, and a wipe and a reboot of
	// it.
	node := newContainerdNode(t)
	bin, cleanup, err := stack.Binaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	var dir string
	if node != nil {
		// Beside containerd's, where hack/chaos-containerd.sh stops the
		// stack by its pid files should the test die without its
		// clean-up.
		dir = filepath.Join(filepath.Dir(node.dir), "stack")
		err = os.Mkdir(dir, 0o755)
	} else {
		dir, err = os.MkdirTemp("", "chaos")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// hack/chaos-containerd.sh's SPLITLET_CHAOS_KEEP=1 keeps its work
		// directory, the stack's logs and state included, to read.
		if node == nil || os.Getenv("SPLITLET_CHAOS_KEEP") != "1" {
			_ = os.RemoveAll(dir)
		}
	})
	plugins := writePluginConfig(t, dir)
	// What went wrong, said again after the processes' logs (a cleanup
	// registered first runs last), so that it ends the output CI shows.
	var failures []string
	t.Cleanup(func() {
		if len(failures) > 0 {
			t.Logf("the failures again, after the logs:\n  %s", strings.Join(failures, "\n  "))
		}
	})

	requestTimeout := "2s"
	endpoint := ""
	var extraSync []string
	if node != nil {
		// No hung calls on containerd, but real ones are slower than the
		// fake's on a loaded machine: a timed-out RunPodSandbox that went
		// through anyway only costs a second sandbox to clean up.
		requestTimeout, endpoint = "30s", node.endpoint()
		extraSync = []string{"--container-gc-period=" + gcPeriod.String()}
	}
	s, err := stack.Start(ctx, stack.Config{
		BinDir:          bin,
		RuntimeEndpoint: endpoint,
		Dir:             dir,
		NodeName:        "chaos",
		GatewayArgs:     []string{"--log-level=warn", "--allowed-host-path=/"},
		// The plugin fails open: a call that meets the plugin dead admits
		// (its crash is the fault under test, not the pods' to pay for).
		AdmissionConfig: fmt.Sprintf("node:\n  rootDir: %s\n  maxPods: 1000\neviction:\n  hard: {}\n  nodeFsRoot: %s\n  imageFsRoot: %s\n",
			dir, dir, dir),
		AdmissionArgs: []string{"--plugins-config=" + plugins, "--log-level=warn"},
		SyncArgs: append([]string{
			"--relist-interval=500ms",
			"--resync-interval=2s",
			"--crashloop-backoff-base=1s",
			"--max-container-restart-period=2s", "--image-pull-backoff-max=2s",
			// A hung CRI call fails after this and is retried by the next
			// sync (the kubelet's default is 2m).
			"--runtime-request-timeout=" + requestTimeout,
			"--log-level=info",
		}, extraSync...),
		Logger: zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			for _, p := range s.Processes() {
				t.Logf("last lines of %s:\n%s", p.LogPath, p.Tail(40))
			}
		}
	})
	c := &chaos{t: t, s: s, node: node, runtime: s.CRI(), client: s.PodService(), failures: &failures}
	victims := []string{"sync", "admission", "gateway", "plugin"}
	// Restarts that must restart no container: on the fake, the gateway
	// holds the runtime and is not among them.
	restarts := []string{"sync", "admission", "plugin"}
	rounds := 1
	if node != nil {
		c.runtime = node.cri()
		c.f = &figures{pods: size(t, 30)}
		victims = append(victims, "containerd")
		restarts = append(restarts, "gateway", "containerd")
		// The burst's applies end long before containerd has started the
		// pods: a second round of kills falls in the middle of that.
		rounds = 2
	} else {
		c.f = &figures{pods: size(t, 200)}
	}
	c.f.deleted = c.f.pods / 2

	// Phase 1: a burst under kills and faults.
	c.setFaults(ctx)
	names := podNames(c.f.pods)
	c.underKills(ctx, victims, rounds, func() { c.applyAll(ctx, names) })
	c.clearFaults(ctx)
	c.f.convergeBurst = c.waitConverged(ctx, names, nil)

	// Phase 2: restarts of splitlet alone (not the runtime) restart no
	// container; nor, on containerd, does a restart of the gateway or of
	// containerd, whose containers live on in their shims.
	before := c.containers(ctx)
	t0 := time.Now()
	for _, name := range restarts {
		c.kill(ctx, name)
	}
	c.waitConverged(ctx, names, nil)
	c.f.convergeRestart = time.Since(t0)
	// Every pod synced twice more by the restarted sync: its chances to
	// restart a container wrongly, before the suite looks.
	c.s.WaitResyncs(t, 2*len(names), converge)
	after := c.containers(ctx)
	for pod, id := range before {
		if after[pod] != id {
			c.f.spurious++
			c.fail("pod %s: container %s became %s after restarts of splitlet alone", pod, id, after[pod])
		}
	}

	if node != nil {
		// The node loses containerd's disk, then reboots twice; the delete
		// that follows must also remove what the reboot left (sandboxes
		// not ready, containers exited).
		c.f.convergeWipe = c.wipePhase(ctx, names, diskLost)
		// The second reboot leaves each pod a sandbox with nothing in it
		// once the container GC removed its older exited container.
		for i := range c.f.convergeReboots {
			c.f.convergeReboots[i] = c.wipePhase(ctx, names, reboot)
		}
		c.waitNoDeadSandboxes(ctx)
	}

	// Phase 3: half the pods deleted under kills and faults.
	gone, kept := names[:c.f.deleted], names[c.f.deleted:]
	c.setFaults(ctx)
	c.underKills(ctx, victims, 1, func() { c.deleteAll(ctx, gone) })
	c.clearFaults(ctx)
	c.f.convergeDelete = c.waitConverged(ctx, kept, gone)
	c.waitNoOrphanPlugins(filepath.Join(dir, "image-allowlist"))

	f := c.f
	if node != nil {
		c.reportContainerd()
		return
	}
	summary := fmt.Sprintf("chaos: pods %d, deleted %d, kills %d (%d of the plugin child), fault phases %d (10%% of CRI calls fail, 1%% hang, 5 ms added to each); "+
		"lost %d, status mismatches %d, duplicate sandboxes %d, spurious restarts %d, orphans %d, orphaned plugin processes %d; "+
		"converged after the burst in %v, after splitlet restarts in %v, after the delete in %v; retries: apply %d, delete %d",
		f.pods, f.deleted, f.kills, f.pluginKills, f.faultsSet, f.lost, f.mismatches, f.duplicates, f.spurious, f.orphans, f.orphanPlugins,
		f.convergeBurst.Round(time.Millisecond), f.convergeRestart.Round(time.Millisecond), f.convergeDelete.Round(time.Millisecond),
		f.applyRetries.Load(), f.deleteRetries.Load())
	t.Log(summary)
	fmt.Println(summary)
	if f.lost+f.mismatches+f.duplicates+f.spurious+f.orphans+f.orphanPlugins > 0 {
		c.fail("the stack did not converge cleanly: %s", summary)
		t.FailNow()
	}
}

// waitNoOrphanPlugins waits up to 10 s until no process runs the plugin
// binary bin but the running admission's child, and counts the others at
// the deadline: each SIGKILL of admission must take its plugin with it.
func (c *chaos) waitNoOrphanPlugins(bin string) {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var orphans []int
		for _, pid := range pidsWithArgs(bin) {
			if ppid(pid) != c.s.Admission.Pid() && alive(pid) {
				orphans = append(orphans, pid)
			}
		}
		if len(orphans) == 0 {
			return
		}
		select {
		case <-deadline:
			c.f.orphanPlugins = len(orphans)
			c.fail("plugin processes %v still run, their admission killed", orphans)
			for _, pid := range orphans {
				_ = syscallKill(pid) // ours: do not leave them behind
			}
			return
		case <-tick.C:
		}
	}
}

// ppid is pid's parent, 0 if unknown.
func ppid(pid int) int {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(fields[1])
	return p
}

type chaos struct {
	t *testing.T
	s *stack.Stack
	// node is the containerd under the gateway, nil on the fake runtime.
	node *containerdNode
	// runtime is where the checks list sandboxes and containers: the
	// gateway's fake runtime, or containerd itself.
	runtime runtimeapi.RuntimeServiceClient
	client  podv1connect.PodServiceClient
	f       *figures
	// faulty says the fake runtime should be failing calls now.
	faulty bool
	// failures collects what the test reported as wrong.
	failures *[]string
}

// fail reports a failure and keeps it for the end of the output.
func (c *chaos) fail(format string, args ...any) {
	c.t.Helper()
	msg := fmt.Sprintf(format, args...)
	*c.failures = append(*c.failures, msg)
	c.t.Error(msg)
}

func podNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("p%04d", i)
	}
	return out
}

// writePluginConfig builds the image-allowlist plugin and writes a chain
// file naming it with its checksum.
func writePluginConfig(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "image-allowlist")
	build := exec.Command("go", "build", "-o", bin, pluginPkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as `make build`: its packages are reused
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the plugin: %v\n%s", err, out)
	}
	sum, err := exec.Command("sha256sum", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`plugins:
  - name: image-allowlist
    path: %s
    sha256: %s
    failurePolicy: Ignore
    timeout: 1s
    env:
      SPLITLET_IMAGE_ALLOWLIST: "docker.io/library/,busybox"
`, bin, strings.Fields(string(sum))[0])
	path := filepath.Join(dir, "plugins.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// underKills runs work while SIGKILLing the named processes one after the
// other, each restarted before the next is killed, until work is done
// and each has been killed at least rounds times.
func (c *chaos) underKills(ctx context.Context, victims []string, rounds int, work func()) {
	done := make(chan struct{})
	go func() { defer close(done); work() }()
	for i := 0; ; i++ {
		select {
		case <-done:
			if i >= rounds*len(victims) {
				return
			}
		default:
		}
		c.kill(ctx, victims[i%len(victims)])
		select {
		case <-done:
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// kill SIGKILLs one process and brings it back: the stack's processes are
// restarted by the test, the plugin child by admission on its next call.
func (c *chaos) kill(ctx context.Context, name string) {
	c.t.Helper()
	if name == "containerd" {
		c.f.kills++
		c.f.containerdKills++
		c.node.kill(ctx)
		return
	}
	if name == "plugin" {
		pid := childPid(c.s.Admission.Pid(), "image-allowlist")
		if pid == 0 {
			return // not started yet, or already being restarted
		}
		if syscallKill(pid) == nil {
			c.f.kills++
			c.f.pluginKills++
		}
		return
	}
	c.f.kills++
	var p *stack.Process
	switch name {
	case "sync":
		p = c.s.Sync
	case "admission":
		p = c.s.Admission
	case "gateway":
		p = c.s.Gateway
	}
	p.Kill()
	if err := p.Restart(ctx, 30*time.Second); err != nil {
		c.t.Fatalf("restart %s: %v", name, err)
	}
	if name == "gateway" && c.faulty {
		// The faults lived in the gateway that died.
		c.setFaults(ctx)
	}
}

// setFaults makes the fake runtime fail 10% of every CRI call, answer each
// 5 ms late, and hang 1% of them until the caller gives up.
func (c *chaos) setFaults(ctx context.Context) {
	c.t.Helper()
	if c.node != nil {
		return // containerd's faults are its kills
	}
	if !c.faulty {
		c.f.faultsSet++
	}
	c.faulty = true
	c.control(ctx, []*gatewayv1.Fault{
		{Method: "*", ErrorRate: 0.1, Latency: durationpb.New(5 * time.Millisecond)},
		{Method: "*", HangRate: 0.01},
	})
}

func (c *chaos) clearFaults(ctx context.Context) {
	c.t.Helper()
	if c.node != nil {
		return
	}
	c.faulty = false
	c.control(ctx, nil)
}

func (c *chaos) control(ctx context.Context, faults []*gatewayv1.Fault) {
	c.t.Helper()
	ctrl := gatewayv1.NewFakeControlServiceClient(c.s.CRIConn())
	err := retry(ctx, 30*time.Second, nil, func(ctx context.Context) error {
		_, err := ctrl.SetFaults(ctx, &gatewayv1.SetFaultsRequest{Faults: faults})
		return err
	})
	if err != nil {
		c.t.Fatalf("SetFaults: %v", err)
	}
}

// applyAll applies every pod, 8 callers at a time, each call retried while
// sync is away (Apply of the same manifest is idempotent).
func (c *chaos) applyAll(ctx context.Context, names []string) {
	c.parallel(names, func(name string) {
		manifest := c.manifest(name)
		err := retry(ctx, converge, &c.f.applyRetries, func(ctx context.Context) error {
			_, err := c.client.Apply(ctx, connect.NewRequest(&podv1.ApplyRequest{Manifest: manifest}))
			return err
		})
		if err != nil {
			c.t.Errorf("apply %s: %v", name, err)
		}
	})
}

// manifest is pod name's: busybox doing nothing on the fake; on
// containerd, sleeping (no CNI in the suite, so host network).
func (c *chaos) manifest(name string) string {
	if c.node != nil {
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s}\nspec:\n  hostNetwork: true\n  terminationGracePeriodSeconds: 1\n"+
			"  containers: [{name: app, image: busybox:1.36, imagePullPolicy: IfNotPresent, command: [sleep, \"3600\"]}]\n", name, namespace)
	}
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers: [{name: app, image: busybox:1.36}]\n", name, namespace)
}

// deleteAll deletes the pods, retried while sync is away; NotFound after a
// retry means an earlier try went through.
func (c *chaos) deleteAll(ctx context.Context, names []string) {
	c.parallel(names, func(name string) {
		err := retry(ctx, converge, &c.f.deleteRetries, func(ctx context.Context) error {
			_, err := c.client.Delete(ctx, connect.NewRequest(&podv1.DeleteRequest{Namespace: namespace, Name: name}))
			if connect.CodeOf(err) == connect.CodeNotFound {
				return nil
			}
			return err
		})
		if err != nil {
			c.t.Errorf("delete %s: %v", name, err)
		}
	})
}

func (c *chaos) parallel(names []string, do func(string)) {
	work := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for name := range work {
				do(name)
			}
		})
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
}

// retry calls call until it succeeds, retrying while the server is away
// or overloaded (Unavailable, Unknown transport errors, deadline) for up to
// timeout; other errors are returned at once. retries counts the retries.
func retry(ctx context.Context, timeout time.Duration, retries *atomic.Int64, call func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := call(cctx)
		cancel()
		if err == nil {
			return nil
		}
		// A server killed mid-call shows as Unavailable, Unknown, a
		// deadline, an EOF or a reset connection (which connect reports as
		// Canceled though our context is not).
		code := connect.CodeOf(err)
		transient := code == connect.CodeUnavailable || code == connect.CodeUnknown || code == connect.CodeDeadlineExceeded ||
			code == connect.CodeCanceled && ctx.Err() == nil ||
			strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "connection reset")
		if !transient || time.Now().After(deadline) {
			return err
		}
		if retries != nil {
			retries.Add(1)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// state is the stack as the PodService and the runtime report it.
type state struct {
	pods       map[string]*v1.Pod
	sandboxes  map[string][]*runtimeapi.PodSandbox // by pod UID, ready ones
	containers map[string]*runtimeapi.Container    // by container ID, running ones
	byUID      map[string]int                      // sandboxes and containers of any state per pod UID
}

func (c *chaos) read(ctx context.Context) (*state, error) {
	st := &state{pods: map[string]*v1.Pod{}, sandboxes: map[string][]*runtimeapi.PodSandbox{},
		containers: map[string]*runtimeapi.Container{}, byUID: map[string]int{}}
	resp, err := c.client.List(ctx, connect.NewRequest(&podv1.ListRequest{Namespace: namespace}))
	if err != nil {
		return nil, err
	}
	for _, raw := range resp.Msg.GetPods() {
		pod, err := toPod(raw)
		if err != nil {
			return nil, err
		}
		st.pods[pod.Name] = pod
	}
	cri := c.runtime
	sbs, err := cri.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, err
	}
	for _, sb := range sbs.GetItems() {
		uid := sb.GetLabels()["io.kubernetes.pod.uid"]
		st.byUID[uid]++
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			st.sandboxes[uid] = append(st.sandboxes[uid], sb)
		}
	}
	ctrs, err := cri.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, err
	}
	for _, ct := range ctrs.GetContainers() {
		st.byUID[ct.GetLabels()["io.kubernetes.pod.uid"]]++
		if ct.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			st.containers[ct.GetId()] = ct
		}
	}
	return st, nil
}

func toPod(raw *structpb.Struct) (*v1.Pod, error) {
	data, err := json.Marshal(raw.AsMap())
	if err != nil {
		return nil, err
	}
	pod := &v1.Pod{}
	return pod, json.Unmarshal(data, pod)
}

// check counts what is wrong with st for pods that should run (want) and
// pods that should be gone (gone).
func check(st *state, want, gone []string) (lost, mismatches, duplicates, orphans int, why []string) {
	for _, name := range want {
		pod, ok := st.pods[name]
		if !ok {
			lost++
			why = append(why, name+": not listed")
			continue
		}
		uid := string(pod.UID)
		if n := len(st.sandboxes[uid]); n > 1 {
			duplicates++
			why = append(why, fmt.Sprintf("%s: %d ready sandboxes", name, n))
		}
		var cs *v1.ContainerStatus
		if len(pod.Status.ContainerStatuses) == 1 {
			cs = &pod.Status.ContainerStatuses[0]
		}
		running := pod.Status.Phase == v1.PodRunning && cs != nil && cs.State.Running != nil
		id := ""
		if cs != nil {
			// runtime://id: splitlet-fake:// or containerd://
			_, id, _ = strings.Cut(cs.ContainerID, "://")
		}
		ct, inRuntime := st.containers[id]
		if !running || !inRuntime || ct.GetLabels()["io.kubernetes.pod.uid"] != uid || len(st.sandboxes[uid]) == 0 {
			mismatches++
			why = append(why, fmt.Sprintf("%s: phase %s, container %q running in the runtime %v, ready sandboxes %d",
				name, pod.Status.Phase, id, inRuntime, len(st.sandboxes[uid])))
		}
	}
	for _, name := range gone {
		if pod, ok := st.pods[name]; ok {
			orphans++
			why = append(why, fmt.Sprintf("%s: still listed (%s)", name, pod.Status.Phase))
		}
	}
	// Anything the runtime holds of a pod that is not listed is an orphan.
	listed := map[string]bool{}
	for _, p := range st.pods {
		listed[string(p.UID)] = true
	}
	for uid, n := range st.byUID {
		if !listed[uid] {
			orphans++
			why = append(why, fmt.Sprintf("pod UID %s: %d sandboxes and containers left in the runtime", uid, n))
		}
	}
	return lost, mismatches, duplicates, orphans, why
}

// waitConverged waits until check finds nothing wrong and returns how long
// it took; at the deadline it records what was still wrong.
func (c *chaos) waitConverged(ctx context.Context, want, gone []string) time.Duration {
	c.t.Helper()
	t0 := time.Now()
	deadline := t0.Add(converge)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var why []string
	for ; ; <-tick.C {
		st, err := c.read(ctx)
		if err == nil {
			lost, mismatches, duplicates, orphans, w := check(st, want, gone)
			why = w
			if lost+mismatches+duplicates+orphans == 0 {
				return time.Since(t0)
			}
			if time.Now().After(deadline) {
				c.f.lost += lost
				c.f.mismatches += mismatches
				c.f.duplicates += duplicates
				c.f.orphans += orphans
				break
			}
		} else {
			why = []string{err.Error()}
			if time.Now().After(deadline) {
				c.t.Fatalf("cannot read the stack's state: %v", err)
			}
		}
	}
	if len(why) > 10 {
		why = append(why[:10], fmt.Sprintf("... and %d more", len(why)-10))
	}
	c.fail("not converged after %v:\n  %s", converge, strings.Join(why, "\n  "))
	return converge
}

// containers maps each pod to its running container's ID.
func (c *chaos) containers(ctx context.Context) map[string]string {
	c.t.Helper()
	st, err := c.read(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	out := map[string]string{}
	for name, pod := range st.pods {
		if len(pod.Status.ContainerStatuses) == 1 {
			out[name] = pod.Status.ContainerStatuses[0].ContainerID
		}
	}
	return out
}

// childPid finds the child of parent whose command line holds name.
func childPid(parent int, name string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), name) {
			return pid
		}
	}
	return 0
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
