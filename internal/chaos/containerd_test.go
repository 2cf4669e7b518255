//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/criclient"
	"github.com/splitlet/splitlet/internal/stack"
)

// Environment of the containerd form (hack/chaos-containerd.sh sets it).
const (
	// envContainerdDir is a private containerd's work directory as
	// hack/lib/containerd.sh lays it out: config.toml, root/, state/,
	// containerd.sock. Set, the suite runs on that containerd; unset, on
	// the fake runtime.
	envContainerdDir = "CHAOS_CONTAINERD_DIR"
	// envImages lists the OCI tarballs (pause, busybox) imported again
	// after containerd lost its root.
	envImages = "CHAOS_IMAGES"
	// criNamespace is where the CRI plugin keeps its containers.
	criNamespace = "k8s.io"
	// runcRoot is where the runc v2 shim keeps runc's state by default
	// (per namespace): /run, which a reboot empties.
	runcRoot = "/run/containerd/runc"
	// gcPeriod is sync's container GC period in the containerd form (the
	// kubelet's is a minute).
	gcPeriod = 2 * time.Second
	// maxLogLinesPerPod bounds sync's log (info level) over the whole
	// run: about 20 lines a pod in a sane run, over 1,000 in one where
	// deleted pods were retried in a busy loop while containerd restarted.
	maxLogLinesPerPod = 100
)

// containerdNode is a containerd the suite owns: it starts it, SIGKILLs and
// restarts it, and takes it down as a node reboot or a lost disk would
// (wipe).
type containerdNode struct {
	t      *testing.T
	dir    string
	sock   string
	images []string
	proc   *stack.Process
	conn   *grpc.ClientConn
}

// newContainerdNode returns nil when envContainerdDir is unset (the fake
// form), else starts containerd from the config hack/lib/containerd.sh
// wrote, with the images it imported. The script stopped the containerd
// it imported with, so that this one is the test's child to kill.
func newContainerdNode(t *testing.T) *containerdNode {
	dir := os.Getenv(envContainerdDir)
	if dir == "" {
		return nil
	}
	if os.Geteuid() != 0 {
		t.Fatalf("%s is set: the containerd form runs containerd and runc, as root", envContainerdDir)
	}
	n := &containerdNode{t: t, dir: dir, sock: filepath.Join(dir, "containerd.sock"), images: strings.Fields(os.Getenv(envImages))}
	if len(n.images) == 0 {
		t.Fatalf("%s is set but %s names no image tarballs", envContainerdDir, envImages)
	}
	conn, err := grpc.NewClient("unix://"+n.sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(criclient.ConnectParams))
	if err != nil {
		t.Fatal(err)
	}
	n.conn = conn
	path, err := exec.LookPath("containerd")
	if err != nil {
		t.Fatal(err)
	}
	n.proc, err = stack.StartProcess(t.Context(), "containerd", path, filepath.Join(dir, "containerd.log"), n.ready, 30*time.Second,
		"--config", filepath.Join(dir, "config.toml"))
	if err != nil {
		t.Fatalf("start containerd: %v", err)
	}
	n.writePid()
	// Registered first, so it runs after the stack's cleanup: what the
	// surviving pods left is removed through the CRI, then containerd
	// stops (hack/lib/containerd.sh containerd_stop reaps the shims).
	t.Cleanup(func() {
		n.removeAll()
		n.proc.Stop(10 * time.Second)
		_ = n.conn.Close()
	})
	return n
}

// endpoint is containerd's CRI endpoint, for the gateway's cri backend.
func (n *containerdNode) endpoint() string { return "unix://" + n.sock }

// cri is containerd's own RuntimeService: the checks read the truth there,
// not through the gateway.
func (n *containerdNode) cri() runtimeapi.RuntimeServiceClient {
	return runtimeapi.NewRuntimeServiceClient(n.conn)
}

// ready is containerd's health check: the CRI plugin answers Version (it
// does once it has recovered its sandboxes and containers).
func (n *containerdNode) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := n.cri().Version(ctx, &runtimeapi.VersionRequest{})
	return err
}

// kill SIGKILLs containerd and starts it again. Its shims, and so the
// containers, live on: the restarted containerd reconnects to them.
func (n *containerdNode) kill(ctx context.Context) {
	n.t.Helper()
	n.proc.Kill()
	if err := n.restart(ctx); err != nil {
		n.t.Fatalf("restart containerd: %v", err)
	}
}

// restart starts containerd again and records its pid.
func (n *containerdNode) restart(ctx context.Context) error {
	err := n.proc.Restart(ctx, 30*time.Second)
	n.writePid()
	return err
}

// writePid records containerd's pid in its directory, for
// hack/chaos-containerd.sh to stop it by that pid should the test die
// without its clean-up (a go test timeout).
func (n *containerdNode) writePid() {
	if err := os.WriteFile(filepath.Join(n.dir, "containerd.pid"), []byte(strconv.Itoa(n.proc.Pid())), 0o644); err != nil {
		n.t.Logf("record containerd's pid: %v", err)
	}
}

// loss says what containerd loses in wipe.
type loss int

const (
	// reboot: containerd as a node reboot leaves it. Every container
	// process dies and /run is empty, so containerd's state directory
	// (tasks, shim sockets, mounts) is gone, but its root on disk keeps
	// the metadata: containerd comes back listing the old sandboxes not
	// ready and the old containers exited, and keeps its images.
	// splitlet's processes stay up (their own restarts are the other
	// phases'), so it is the relist that must notice.
	reboot loss = iota
	// diskLost: the same, and containerd's root is gone too (a node
	// re-imaged, /var/lib/containerd deleted): no sandbox, container,
	// snapshot or image is left. The images come back by an import,
	// standing in for the pull the node would make (there is no registry
	// here); a pod that asks for its image before the import meets
	// ErrImagePull and its back-off, as on a node pulling again.
	diskLost
)

func (l loss) String() string {
	if l == reboot {
		return "reboot"
	}
	return "wipe"
}

// wipe takes containerd down as the node would lose it (see loss):
// containerd SIGKILLed, every container process and shim killed, runc's
// state under /run and every mount gone, the state directory (and for
// diskLost the root) deleted; then containerd is started again.
func (n *containerdNode) wipe(ctx context.Context, l loss) {
	n.t.Helper()
	n.proc.Kill()
	stateDir, rootDir := filepath.Join(n.dir, "state"), filepath.Join(n.dir, "root")
	tasks, _ := filepath.Glob(filepath.Join(stateDir, "io.containerd.runtime.v2.task", criNamespace, "*"))
	var inits []int
	for _, bundle := range tasks {
		if raw, err := os.ReadFile(filepath.Join(bundle, "init.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && pid > 1 {
				inits = append(inits, pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if len(inits) == 0 {
		n.t.Fatalf("wipe containerd: no container process under %s: nothing to wipe, the suite is wrong", stateDir)
	}
	for _, pid := range pidsWithArgs("-address " + n.sock) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, bundle := range tasks {
		// What a reboot clears with /run: runc's state and the container's
		// cgroup (delete --force kills anything left in it first).
		_ = exec.Command("runc", "--root", filepath.Join(runcRoot, criNamespace), "delete", "--force", filepath.Base(bundle)).Run()
	}
	// Not one container of before may live on into the wiped node.
	stack.WaitFor(n.t, 10*time.Second, "the containers' processes to end", func() (bool, string) {
		for _, pid := range inits {
			if alive(pid) {
				return false, fmt.Sprintf("pid %d still runs", pid)
			}
		}
		return true, ""
	})
	if err := unmountUnder(n.dir); err != nil {
		n.t.Fatalf("wipe containerd: %v", err)
	}
	lost := []string{stateDir}
	if l == diskLost {
		lost = append(lost, rootDir)
	}
	for _, d := range lost {
		if err := os.RemoveAll(d); err != nil {
			n.t.Fatalf("wipe containerd: %v", err)
		}
	}
	if err := n.restart(ctx); err != nil {
		n.t.Fatalf("restart containerd after the %v: %v", l, err)
	}
	// The harness checks itself: after a reboot containerd lists the old
	// sandboxes, not ready; after the disk is lost, none of them.
	resp, err := n.cri().ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		n.t.Fatalf("list sandboxes after the %v: %v", l, err)
	}
	old := map[string]bool{}
	for _, bundle := range tasks {
		old[filepath.Base(bundle)] = true
	}
	stale := 0
	for _, sb := range resp.GetItems() {
		if old[sb.GetId()] {
			if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				n.t.Fatalf("sandbox %s is ready after the %v", sb.GetId(), l)
			}
			stale++
		}
	}
	if l == reboot && stale == 0 || l == diskLost && stale > 0 {
		n.t.Fatalf("containerd lists %d sandboxes of before after the %v", stale, l)
	}
	if l != diskLost {
		return
	}
	for _, img := range n.images {
		out, err := exec.CommandContext(ctx, "ctr", "--address", n.sock, "-n", criNamespace, "images", "import", "--all-platforms", img).CombinedOutput()
		if err != nil {
			n.t.Fatalf("import %s into the wiped containerd: %v\n%s", img, err, out)
		}
	}
}

// removeAll stops and removes every sandbox left in containerd (the pods
// the suite kept), so the shims exit and their mounts go, and then those
// pods' cgroups, which sync would have removed had it deleted them.
func (n *containerdNode) removeAll() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := n.cri().ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		n.t.Logf("clean up containerd: %v", err)
		return
	}
	for _, sb := range resp.GetItems() {
		if _, err := n.cri().StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.GetId()}); err != nil {
			n.t.Logf("clean up containerd: stop sandbox %s: %v", sb.GetId(), err)
		}
		if _, err := n.cri().RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.GetId()}); err != nil {
			n.t.Logf("clean up containerd: remove sandbox %s: %v", sb.GetId(), err)
		}
	}
	for _, sb := range resp.GetItems() {
		removePodCgroups(n.t, sb.GetMetadata().GetUid())
	}
}

// removePodCgroups removes the pod-level cgroups sync asked for
// (/kubepods[/burstable|/besteffort]/pod<uid>, cgroupfs driver) in every
// hierarchy, once empty; on cgroup v1 every controller directory is one.
func removePodCgroups(t *testing.T, uid string) {
	const root = "/sys/fs/cgroup"
	hierarchies := []string{root}
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
		entries, _ := os.ReadDir(root)
		hierarchies = hierarchies[:0]
		for _, e := range entries {
			if e.IsDir() {
				hierarchies = append(hierarchies, filepath.Join(root, e.Name()))
			}
		}
	}
	for _, h := range hierarchies {
		for _, parent := range []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"} {
			dir := filepath.Join(h, parent, "pod"+uid)
			if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
				t.Logf("clean up: %v", err)
			}
		}
	}
}

// pidsWithArgs lists the processes whose command line (arguments joined by
// spaces) holds args: the shims of one containerd carry its socket.
func pidsWithArgs(args string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(raw), "\x00", " "), args) {
			out = append(out, pid)
		}
	}
	return out
}

// alive says whether pid runs (a zombie does not: it only waits for its
// parent, here init after the shim died, to reap it).
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	fields := strings.Fields(rest)
	return len(fields) > 0 && fields[0] != "Z"
}

// unmountUnder detaches every mount point under dir, deepest first.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
			return fmt.Errorf("unmount %s: %w", p, err)
		}
	}
	return nil
}

// wipePhase takes containerd down under the running stack as l says
// (containerdNode.wipe) and waits until every pod runs again. As the
// kubelet does when its relist finds a pod's sandbox not ready (reboot) or
// gone (diskLost), sync must start each pod in a new sandbox and carry its
// restart count on: from the exited container's after a reboot, from the
// container log directory when the runtime forgot the container (the
// kubelet's calcRestartCountByLogDir; the wipe leaves the node's logs).
func (c *chaos) wipePhase(ctx context.Context, names []string, l loss) time.Duration {
	c.t.Helper()
	st, err := c.read(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	oldSandboxes := map[string]bool{}
	for _, sbs := range st.sandboxes {
		for _, sb := range sbs {
			oldSandboxes[sb.GetId()] = true
		}
	}
	counts := map[string]int32{}
	for name, pod := range st.pods {
		if len(pod.Status.ContainerStatuses) == 1 {
			counts[name] = pod.Status.ContainerStatuses[0].RestartCount
		}
	}

	t0 := time.Now()
	c.node.wipe(ctx, l)
	c.waitConverged(ctx, names, nil)
	took := time.Since(t0)

	st, err = c.read(ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, name := range names {
		pod := st.pods[name]
		if pod == nil || len(pod.Status.ContainerStatuses) != 1 {
			continue // counted by waitConverged
		}
		for _, sb := range st.sandboxes[string(pod.UID)] {
			if oldSandboxes[sb.GetId()] {
				c.f.reused++
				c.fail("pod %s: sandbox %s ready again after the %v", name, sb.GetId(), l)
			}
		}
		if got, was := pod.Status.ContainerStatuses[0].RestartCount, counts[name]; got <= was {
			c.f.countsLost++
			c.fail("pod %s: restart count %d after the %v, was %d: want it carried on", name, got, l, was)
		}
	}
	return took
}

// waitNoDeadSandboxes waits up to three container GC periods until no pod
// keeps a dead sandbox: one not ready, holding no container, and not the
// pod's newest. The kubelet's container GC removes those
// (containerGC.evictSandboxes, after evictContainers kept the newest exited
// instance of each container); two reboots leave one per pod. It counts
// what is left at the deadline.
func (c *chaos) waitNoDeadSandboxes(ctx context.Context) {
	c.t.Helper()
	deadline := time.Now().Add(3 * gcPeriod)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var dead []string
	for ; ; <-tick.C {
		sbs, err := c.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			c.t.Fatal(err)
		}
		ctrs, err := c.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		if err != nil {
			c.t.Fatal(err)
		}
		holds := map[string]bool{}
		for _, ct := range ctrs.GetContainers() {
			holds[ct.GetPodSandboxId()] = true
		}
		newest := map[string]*runtimeapi.PodSandbox{}
		for _, sb := range sbs.GetItems() {
			uid := sb.GetMetadata().GetUid()
			if n := newest[uid]; n == nil || sb.GetCreatedAt() > n.GetCreatedAt() {
				newest[uid] = sb
			}
		}
		dead = dead[:0]
		for _, sb := range sbs.GetItems() {
			if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY && !holds[sb.GetId()] && newest[sb.GetMetadata().GetUid()] != sb {
				dead = append(dead, fmt.Sprintf("%s/%s: sandbox %s", sb.GetMetadata().GetNamespace(), sb.GetMetadata().GetName(), sb.GetId()))
			}
		}
		if len(dead) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	c.f.deadSandboxes = len(dead)
	if len(dead) > 10 {
		dead = append(dead[:10], fmt.Sprintf("... and %d more", len(dead)-10))
	}
	c.fail("dead sandboxes kept after %v (three container GC periods):\n  %s", 3*gcPeriod, strings.Join(dead, "\n  "))
}

// reportContainerd prints the containerd form's figures and fails the test
// when one that must be zero is not.
func (c *chaos) reportContainerd() {
	c.t.Helper()
	f := c.f
	// A pod worker retrying in a busy loop while the runtime was away
	// wrote tens of thousands of lines; a sane run writes a few per pod
	// and event.
	logLines := 0
	if raw, err := os.ReadFile(c.s.Sync.LogPath); err == nil {
		logLines = strings.Count(string(raw), "\n")
	}
	if logLines > maxLogLinesPerPod*f.pods {
		c.fail("sync wrote %d log lines for %d pods (more than %d a pod): something retried in a loop", logLines, f.pods, maxLogLinesPerPod)
	}
	summary := fmt.Sprintf("chaos on containerd: pods %d, deleted %d, kills %d (%d of containerd, %d of the plugin child), containerd wiped 1, then rebooted 2; "+
		"lost %d, status mismatches %d, duplicate sandboxes %d, spurious restarts %d, orphans %d, old sandboxes ready again %d, restart counts lost %d, dead sandboxes kept %d, orphaned plugin processes %d; "+
		"converged after the burst in %v, after restarts of splitlet and containerd in %v, after the wipe in %v, after the reboots in %v and %v, after the delete in %v; retries: apply %d, delete %d; sync log lines %d",
		f.pods, f.deleted, f.kills, f.containerdKills, f.pluginKills,
		f.lost, f.mismatches, f.duplicates, f.spurious, f.orphans, f.reused, f.countsLost, f.deadSandboxes, f.orphanPlugins,
		f.convergeBurst.Round(time.Millisecond), f.convergeRestart.Round(time.Millisecond), f.convergeWipe.Round(time.Millisecond), f.convergeReboots[0].Round(time.Millisecond), f.convergeReboots[1].Round(time.Millisecond), f.convergeDelete.Round(time.Millisecond),
		f.applyRetries.Load(), f.deleteRetries.Load(), logLines)
	c.t.Log(summary)
	fmt.Println(summary)
	if f.lost+f.mismatches+f.duplicates+f.spurious+f.orphans+f.reused+f.countsLost+f.deadSandboxes+f.orphanPlugins > 0 {
		c.fail("the stack did not converge cleanly: %s", summary)
		c.t.FailNow()
	}
}
