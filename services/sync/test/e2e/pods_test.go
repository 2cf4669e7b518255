package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// appLine is what the app container of the init-app pod prints once.
const appLine = "hello from splitlet-sync on containerd"

// initAppPod is issue 3's first scenario: one init container, then one app
// container printing a line and staying up. The app shell traps SIGTERM and
// waits on a background sleep so deletion does not sit out the grace period.
const initAppPod = `apiVersion: v1
kind: Pod
metadata:
  name: init-app
  namespace: splitlet-e2e
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 10
  initContainers:
  - name: init
    image: IMAGE
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "echo init-done"]
  containers:
  - name: app
    image: IMAGE
    imagePullPolicy: IfNotPresent
    command:
    - sh
    - -c
    - |
      echo "APPLINE"
      trap 'exit 0' TERM
      while true; do sleep 1 & wait $!; done
`

// logsPod is issue 4's: "count" prints five numbered lines per run and
// crashes on its first run only (an emptyDir remembers the runs across
// restarts), so after one restart its state is stable: restartCount 1, the
// previous instance's log "run 1 line 1..5", the current one's "run 2 line
// 1..5". "tick" prints a numbered line every 200 ms, for follow.
const logsPod = `apiVersion: v1
kind: Pod
metadata:
  name: logs
  namespace: splitlet-e2e
spec:
  hostNetwork: true
  restartPolicy: Always
  terminationGracePeriodSeconds: 10
  volumes:
  - name: runs
    emptyDir: {}
  containers:
  - name: count
    image: IMAGE
    imagePullPolicy: IfNotPresent
    volumeMounts:
    - name: runs
      mountPath: /runs
    command:
    - sh
    - -c
    - |
      n=$(( $(cat /runs/n 2>/dev/null || echo 0) + 1 ))
      echo $n > /runs/n
      i=1
      while [ $i -le 5 ]; do echo "run $n line $i"; i=$((i + 1)); done
      if [ $n -eq 1 ]; then exit 1; fi
      trap 'exit 0' TERM
      while true; do sleep 1 & wait $!; done
  - name: tick
    image: IMAGE
    imagePullPolicy: IfNotPresent
    command:
    - sh
    - -c
    - |
      trap 'exit 0' TERM
      i=0
      while true; do i=$((i + 1)); echo "tick $i"; sleep 0.2 & wait $!; done
`

// TestPodsOnContainerd applies both pods at once (a real runtime takes a
// while per pod), then checks each scenario in order and ends by deleting
// them: the steps share the pods, so they are subtests of one test.
func TestPodsOnContainerd(t *testing.T) {
	e := newEnv(t)
	manifest := strings.ReplaceAll(initAppPod, "APPLINE", appLine) + "---\n" + logsPod
	uids := e.apply(t, strings.ReplaceAll(manifest, "IMAGE", e.image))
	t.Logf("applied init-app (uid %s) and logs (uid %s), image %s", uids["init-app"], uids["logs"], e.image)

	t.Run("init-then-app", func(t *testing.T) { testInitThenApp(t, e) })
	t.Run("exec", func(t *testing.T) { testExec(t, e) })
	t.Run("exec-interactive", func(t *testing.T) { testExecInteractive(t, e) })
	t.Run("logs-previous-and-tail", func(t *testing.T) { testLogsPreviousAndTail(t, e) })
	t.Run("logs-follow", func(t *testing.T) { testLogsFollow(t, e) })
	t.Run("sync-crash", func(t *testing.T) { testSyncCrash(t, e) })
	t.Run("delete", func(t *testing.T) { testDelete(t, e) })
}

// testInitThenApp: the pod runs, its init container ran to completion before
// the app container started, and the app's line is in its log.
func testInitThenApp(t *testing.T, e *env) {
	pod := e.waitPod(t, "init-app", 60*time.Second, "Running with app running", func(p *v1.Pod) bool {
		app := status(p, "app")
		return p.Status.Phase == v1.PodRunning && app != nil && app.State.Running != nil
	})
	initSt, app := status(pod, "init"), status(pod, "app")
	if initSt == nil || initSt.State.Terminated == nil {
		t.Fatalf("init container status = %+v, want terminated", initSt)
	}
	if term := initSt.State.Terminated; term.ExitCode != 0 || term.Reason != "Completed" {
		t.Errorf("init container terminated with exit %d reason %q, want exit 0 reason Completed", term.ExitCode, term.Reason)
	}
	if initSt.RestartCount != 0 || app.RestartCount != 0 {
		t.Errorf("restart counts init %d app %d, want 0 and 0", initSt.RestartCount, app.RestartCount)
	}
	// The status's times have one-second resolution (metav1.Time).
	if fin, start := initSt.State.Terminated.FinishedAt.Time, app.State.Running.StartedAt.Time; fin.After(start) {
		t.Errorf("pod status: init finished at %s, after app started at %s", fin, start)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodInitialized && c.Status != v1.ConditionTrue {
			t.Errorf("condition Initialized = %s (%s), want True", c.Status, c.Reason)
		}
	}

	// The runtime's nanosecond times settle the order.
	if e.cri == nil {
		t.Log("SPLITLET_GATEWAY_ENDPOINT not set: init/app order checked at one-second resolution only")
	} else {
		ic := e.criContainer(t, runtimeID(t, initSt.ContainerID))
		ac := e.criContainer(t, runtimeID(t, app.ContainerID))
		if ic.GetFinishedAt() == 0 || ac.GetStartedAt() == 0 {
			t.Fatalf("runtime times: init finished_at %d, app started_at %d; want both set", ic.GetFinishedAt(), ac.GetStartedAt())
		}
		if ic.GetFinishedAt() > ac.GetStartedAt() {
			t.Errorf("runtime: init finished at %s, after app started at %s", time.Unix(0, ic.GetFinishedAt()), time.Unix(0, ac.GetStartedAt()))
		} else {
			t.Logf("runtime: init exited %d, finished %s before app started",
				ic.GetExitCode(), time.Duration(ac.GetStartedAt()-ic.GetFinishedAt()))
		}
	}

	if got := e.logs(t, &podv1.LogsRequest{Name: "init-app", Container: "init"}); got != "init-done\n" {
		t.Errorf("init log = %q, want %q", got, "init-done\n")
	}
	// The app printed its line before sleeping; containerd may not have
	// flushed it to the file by the time the status says Running.
	var got string
	waitFor(t, 10*time.Second, "app line in the log", func() (bool, string) {
		got = e.logs(t, &podv1.LogsRequest{Name: "init-app", Container: "app"})
		return got == appLine+"\n", fmt.Sprintf("%q", got)
	})
	t.Logf("app container log: %s", strings.TrimSuffix(got, "\n"))
}

// testExec: ExecSync runs in the real app container and reports its output
// and exit code; a non-zero exit is a result, not an error.
func testExec(t *testing.T, e *env) {
	for _, tc := range []struct {
		desc     string
		command  []string
		stdout   string
		exitCode int32
	}{
		{desc: "echo", command: []string{"echo", "exec-ok"}, stdout: "exec-ok\n", exitCode: 0},
		{desc: "exit code", command: []string{"sh", "-c", "exit 3"}, stdout: "", exitCode: 3},
		{desc: "sees the container's filesystem", command: []string{"sh", "-c", "test -x /bin/busybox && echo busybox"}, stdout: "busybox\n", exitCode: 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			m := e.execSync(t, "init-app", "app", tc.command...)
			if string(m.GetStdout()) != tc.stdout || m.GetExitCode() != tc.exitCode {
				t.Errorf("ExecSync %q = stdout %q exit %d (stderr %q), want stdout %q exit %d",
					tc.command, m.GetStdout(), m.GetExitCode(), m.GetStderr(), tc.stdout, tc.exitCode)
			}
			t.Logf("exec %q -> stdout %q exit %d", tc.command, m.GetStdout(), m.GetExitCode())
		})
	}
}

// numbered returns "run RUN line FROM".."run RUN line TO".
func numbered(run int, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("run %d line %d", run, i))
	}
	return out
}

// testLogsPreviousAndTail: after one crash and restart, the current and the
// previous instance each have their own CRI log file written by containerd;
// tail and previous pick the right lines.
func testLogsPreviousAndTail(t *testing.T, e *env) {
	pod := e.waitPod(t, "logs", 90*time.Second, "count restarted once and running", func(p *v1.Pod) bool {
		c := status(p, "count")
		return c != nil && c.RestartCount >= 1 && c.State.Running != nil
	})
	count := status(pod, "count")
	if count.RestartCount != 1 {
		t.Fatalf("count restartCount = %d, want 1 (only its first run crashes)", count.RestartCount)
	}
	last := count.LastTerminationState.Terminated
	if last == nil || last.ExitCode != 1 {
		t.Fatalf("count lastState = %+v, want terminated with exit 1", count.LastTerminationState)
	}
	if last.ContainerID == count.ContainerID {
		t.Errorf("previous and current instance share container ID %s", last.ContainerID)
	}
	t.Logf("count restarted %d time(s); first instance exited %d (%s)", count.RestartCount, last.ExitCode, last.Reason)

	// Each instance has its own file, named as the kubelet's
	// buildContainerLogsPath does: <pod logs dir>/<container>/<restartCount>.log
	// under <root>/<namespace>_<name>_<uid> (BuildPodLogsDirectory).
	if e.cri != nil {
		podDir := filepath.Join(namespace+"_logs_"+string(pod.UID), "count")
		if root := os.Getenv("SPLITLET_POD_LOGS_ROOT"); root != "" {
			podDir = filepath.Join(root, podDir)
		}
		for _, tc := range []struct {
			desc, id, want string
		}{
			{desc: "previous", id: last.ContainerID, want: filepath.Join(podDir, "0.log")},
			{desc: "current", id: count.ContainerID, want: filepath.Join(podDir, "1.log")},
		} {
			got := e.criContainer(t, runtimeID(t, tc.id)).GetLogPath()
			if !strings.HasSuffix(got, tc.want) {
				t.Errorf("%s instance's CRI log path = %q, want it to end in %q", tc.desc, got, tc.want)
			}
		}
	}

	for _, tc := range []struct {
		desc string
		req  *podv1.LogsRequest
		want []string
	}{
		{desc: "current", req: &podv1.LogsRequest{}, want: numbered(2, 1, 5)},
		{desc: "tail 2", req: &podv1.LogsRequest{TailLines: ptr(int64(2))}, want: numbered(2, 4, 5)},
		{desc: "previous", req: &podv1.LogsRequest{Previous: true}, want: numbered(1, 1, 5)},
		{desc: "previous tail 3", req: &podv1.LogsRequest{Previous: true, TailLines: ptr(int64(3))}, want: numbered(1, 3, 5)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			tc.req.Name, tc.req.Container = "logs", "count"
			var got []string
			// The current instance may still be writing its five lines.
			waitFor(t, 10*time.Second, tc.desc+" log", func() (bool, string) {
				got = lines(e.logs(t, tc.req))
				return strings.Join(got, "\n") == strings.Join(tc.want, "\n"), fmt.Sprintf("%q", got)
			})
			t.Logf("%s: %q", tc.desc, got)
		})
	}
}

// testLogsFollow: a followed log of a running container delivers lines as
// containerd writes them. With tail 1 the first line is the last one written
// before the request; every later line was written afterwards, so receiving
// several in order, none lost, proves the stream follows the file.
func testLogsFollow(t *testing.T, e *env) {
	e.waitPod(t, "logs", 60*time.Second, "tick running", func(p *v1.Pod) bool {
		c := status(p, "tick")
		return c != nil && c.State.Running != nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := e.pods.Logs(ctx, connect.NewRequest(&podv1.LogsRequest{
		Namespace: namespace, Name: "logs", Container: "tick", Follow: true, TailLines: ptr(int64(1)),
	}))
	if err != nil {
		t.Fatalf("Logs follow: %v", err)
	}
	defer stream.Close()

	const want = 6 // the tail line and five written while following
	var ticks []int
	var arrived []time.Duration
	start := time.Now()
	var buf string // what arrived after the last newline
	for len(ticks) < want && stream.Receive() {
		buf += string(stream.Msg().GetData())
		for {
			line, rest, ok := strings.Cut(buf, "\n")
			if !ok {
				break
			}
			buf = rest
			num, found := strings.CutPrefix(line, "tick ")
			n, err := strconv.Atoi(num)
			if !found || err != nil {
				t.Fatalf("followed line %q is not a tick", line)
			}
			ticks = append(ticks, n)
			arrived = append(arrived, time.Since(start).Round(time.Millisecond))
		}
	}
	if len(ticks) < want {
		t.Fatalf("follow ended after %d lines %v: %v (ctx %v)", len(ticks), ticks, stream.Err(), ctx.Err())
	}
	for i := 1; i < len(ticks); i++ {
		if ticks[i] != ticks[i-1]+1 {
			t.Errorf("followed ticks %v are not consecutive: a line was lost or repeated", ticks)
			break
		}
	}
	// Six lines 200 ms apart cannot all have been in the file when the tail
	// was read; had the stream sent only what was there, it would not have
	// reached six lines.
	t.Logf("followed ticks %v arrived at %v", ticks, arrived)
}

// testDelete: deleting the pods stops and removes them; sync forgets them
// and the runtime keeps no sandbox or container of theirs.
func testDelete(t *testing.T, e *env) {
	if e.cri != nil {
		// Without this the check below could pass by looking at the wrong
		// pods (say, a label the runtime does not set).
		if n := len(e.ourSandboxes(t)); n != 2 {
			t.Fatalf("runtime has %d sandboxes of namespace %s before deletion, want 2", n, namespace)
		}
	}
	// The pods' cgroups, made by the runtime under sync's cgroup parents;
	// sync removes them once it has removed the pods.
	var cgroups []string
	if e.cri != nil {
		for _, sb := range e.ourSandboxes(t) {
			cgroups = append(cgroups, podCgroups(sb.GetMetadata().GetUid())...)
		}
	}
	started := time.Now()
	for _, name := range []string{"init-app", "logs"} {
		e.deletePod(t, name, 60*time.Second)
	}
	t.Logf("both pods deleted in %s", time.Since(started).Round(time.Millisecond))
	if e.cri == nil {
		t.Skip("SPLITLET_GATEWAY_ENDPOINT not set: cannot check the runtime for leftover sandboxes")
	}
	waitFor(t, 30*time.Second, "no sandbox or container of the test namespace in the runtime", func() (bool, string) {
		sbs, cs := e.ourSandboxes(t), e.ourContainers(t)
		var left []string
		for _, sb := range sbs {
			left = append(left, fmt.Sprintf("sandbox %s (%s, %s)", sb.GetId()[:12], sb.GetMetadata().GetName(), sb.GetState()))
		}
		for _, c := range cs {
			left = append(left, fmt.Sprintf("container %s (%s, %s)", c.GetId()[:12], c.GetMetadata().GetName(), c.GetState()))
		}
		return len(left) == 0, strings.Join(left, "; ")
	})
	if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
		t.Skip("no cgroupfs at /sys/fs/cgroup: cannot check that the pods' cgroups are removed")
	}
	if len(cgroups) == 0 {
		t.Fatal("found no cgroup of the pods under /sys/fs/cgroup/.../kubepods while they ran")
	}
	t.Logf("the pods had %d pod-level cgroup directories (e.g. %s)", len(cgroups), cgroups[0])
	waitFor(t, 30*time.Second, "the pods' cgroups removed", func() (bool, string) {
		var left []string
		for _, dir := range cgroups {
			if _, err := os.Stat(dir); err == nil {
				left = append(left, dir)
			}
		}
		return len(left) == 0, strings.Join(left, " ")
	})
}

// podCgroups returns the pod-level cgroup directories of the pod on this
// machine, in every hierarchy (cgroup v1) or the unified one (v2), under the
// kubelet's cgroupfs layout sync uses.
func podCgroups(uid string) []string {
	var dirs []string
	for _, pattern := range []string{
		"/sys/fs/cgroup/*/kubepods/pod" + uid, "/sys/fs/cgroup/*/kubepods/*/pod" + uid,
		"/sys/fs/cgroup/kubepods/pod" + uid, "/sys/fs/cgroup/kubepods/*/pod" + uid,
	} {
		m, _ := filepath.Glob(pattern)
		dirs = append(dirs, m...)
	}
	return dirs
}

// testSyncCrash: sync killed with SIGKILL and restarted on containerd keeps
// the pod's startTime, its conditions' transition times and its containers
// (same IDs, no restart), as a restarted kubelet does.
func testSyncCrash(t *testing.T, e *env) {
	if launched == nil {
		t.Skip("the stack was named by the environment (SPLITLET_SYNC_ADDR), not started by this test: it cannot kill sync")
	}
	before := e.waitPod(t, "init-app", 30*time.Second, "Running and Ready", func(p *v1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady {
				return c.Status == v1.ConditionTrue
			}
		}
		return false
	})
	waitFor(t, 10*time.Second, "statuses kept", func() (bool, string) {
		v, err := launched.Metric("splitlet_status_keeper_unsaved_changes")
		return err == nil && v == 0, fmt.Sprint(v, err)
	})
	before = e.get(t, "init-app")
	launched.Sync.Kill()
	if err := launched.Sync.Restart(t.Context(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	after := e.waitPod(t, "init-app", 30*time.Second, "Running after the restart", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if !after.Status.StartTime.Equal(before.Status.StartTime) {
		t.Errorf("startTime %v after the restart, was %v", after.Status.StartTime, before.Status.StartTime)
	}
	for _, c := range before.Status.Conditions {
		found := false
		for _, n := range after.Status.Conditions {
			if n.Type == c.Type {
				found = true
				if n.Status != c.Status || !n.LastTransitionTime.Equal(&c.LastTransitionTime) {
					t.Errorf("condition %s = %s at %v after the restart, was %s at %v", c.Type, n.Status, n.LastTransitionTime, c.Status, c.LastTransitionTime)
				}
			}
		}
		if !found {
			t.Errorf("condition %s missing after the restart", c.Type)
		}
	}
	for _, name := range []string{"init", "app"} {
		b, a := status(before, name), status(after, name)
		if a == nil || a.ContainerID != b.ContainerID || a.RestartCount != b.RestartCount {
			t.Errorf("container %s = %+v after the restart, was %+v", name, a, b)
		}
	}
}
