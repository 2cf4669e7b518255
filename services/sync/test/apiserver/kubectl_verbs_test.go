package apiserver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestKubectlVerbsThroughAPIServer: the kubectl verbs beyond exec and
// port-forward that a user reaches a kubelet's node with — logs -f,
// attach, cp both ways and debug with an ephemeral container — work
// against splitlet on containerd, through the API server.
func TestKubectlVerbsThroughAPIServer(t *testing.T) {
	pki, endpoint, kubeBin := streamsEnv(t)
	image := busyboxImage()
	admin, kubeconfig := kubeClient(t)
	ctx := t.Context()
	_, st, node, _ := nodeAPIStack(t, pki, endpoint)
	ns := "default"
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "verbs-" + node, Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:                     node,
			HostNetwork:                  true,
			AutomountServiceAccountToken: new(false),
			Tolerations:                  []v1.Toleration{{Key: "splitlet.dev/agent", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}},
			Containers: []v1.Container{
				{Name: "ticker", Image: image, ImagePullPolicy: v1.PullNever,
					Command: []string{"sh", "-c", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.2; done"}},
				{Name: "echoer", Image: image, ImagePullPolicy: v1.PullNever, Stdin: true,
					Command: []string{"sh", "-c", "while read l; do echo got:$l; done"}},
			},
		},
	}
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	waitFor(t, 90*time.Second, "both containers running", func() (bool, string) {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil {
				running++
			}
		}
		return running == 2, fmt.Sprintf("statuses %+v", p.Status.ContainerStatuses)
	})
	kubectl := func(args ...string) []string {
		return append([]string{filepath.Join(kubeBin, "kubectl"), "--kubeconfig", kubeconfig, "-n", ns}, args...)
	}

	t.Run("logs -f", func(t *testing.T) {
		// --tail=1 alone would print one line and end; following, new
		// lines keep coming.
		out := runUntil(t, kubectl("logs", "-f", "--tail=1", pod.Name, "-c", "ticker"), "", func(out string) bool {
			return strings.Count(out, "tick ") >= 4
		})
		if !strings.HasPrefix(out, "tick ") {
			t.Errorf("kubectl logs -f printed %q", out)
		}
	})

	t.Run("attach -i", func(t *testing.T) {
		runUntil(t, kubectl("attach", "-i", pod.Name, "-c", "echoer"), "hello\n", func(out string) bool {
			return strings.Contains(out, "got:hello")
		})
	})

	t.Run("cp both ways", func(t *testing.T) {
		dir := t.TempDir()
		content := make([]byte, 256<<10)
		_, _ = rand.Read(content)
		local := filepath.Join(dir, "in.bin")
		if err := os.WriteFile(local, content, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := runKubectl(kubectl("cp", local, pod.Name+":/tmp/in.bin", "-c", "ticker")); err != nil {
			t.Fatalf("kubectl cp to the pod: %v", err)
		}
		sum := hex.EncodeToString(content)
		out, err := runKubectl(kubectl("exec", pod.Name, "-c", "ticker", "--", "sh", "-c", "od -An -v -tx1 /tmp/in.bin | tr -d ' \\n'"))
		if err != nil || out != sum {
			t.Fatalf("the copied file in the pod differs (%d hex chars, want %d): %v", len(out), len(sum), err)
		}
		back := filepath.Join(dir, "back.bin")
		if _, err := runKubectl(kubectl("cp", pod.Name+":/tmp/in.bin", back, "-c", "ticker")); err != nil {
			t.Fatalf("kubectl cp from the pod: %v", err)
		}
		got, err := os.ReadFile(back)
		if err != nil || hex.EncodeToString(got) != sum {
			t.Fatalf("the file copied back differs (%d bytes, want %d): %v", len(got), len(content), err)
		}
	})

	t.Run("debug -i with an ephemeral container", func(t *testing.T) {
		// On a failure, what the runtime and the stream path hold is
		// logged (RELIABILITY.md tells how this spec once lost output).
		t.Cleanup(func() {
			if t.Failed() {
				dumpContainer(t, st, pod.Name, "debugger")
				dumpStreams(t, st)
				grepLog(t, st, "sync", regexp.MustCompile(`/attach/|debugger`))
			}
		})
		// The ephemeral container shares the ticker's process namespace
		// (--target): it sees the ticker's shell loop. -v=6 logs kubectl's
		// requests, the attach's among them.
		//
		// The debugger then waits for a line it never gets: containerd
		// ends an attach as soon as one of the container's output streams
		// ends (its ContainerIO.Attach), so output still on its way in the
		// other one would be lost if the debugger exited right after
		// printing.
		out := runUntil(t, kubectl("-v=6", "debug", "-i", pod.Name, "--image="+image, "--image-pull-policy=Never",
			"-c", "debugger", "--target=ticker", "--", "sh", "-c", "read l; echo dbg:$l; ps -o args | grep -c '[w]hile true'; read l"),
			"hi\n", func(out string) bool { return debugOutput.MatchString(out) })
		// The ticker's shell, and for a moment after each fork the child
		// that is about to exec sleep: 1 or more, never 0.
		if m := debugOutput.FindStringSubmatch(out); m[1] == "0" {
			t.Errorf("the debugger sees no ticker shell, want at least 1 (its process namespace is the ticker's): %q", out)
		}
		p, err := admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Spec.EphemeralContainers) != 1 || p.Spec.EphemeralContainers[0].Name != "debugger" {
			t.Fatalf("ephemeral containers %+v", p.Spec.EphemeralContainers)
		}
		waitFor(t, 30*time.Second, "the ephemeral container's status", func() (bool, string) {
			p, err := admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, cs := range p.Status.EphemeralContainerStatuses {
				if cs.Name == "debugger" && (cs.State.Running != nil || cs.State.Terminated != nil) {
					return true, ""
				}
			}
			return false, fmt.Sprintf("ephemeral statuses %+v (kubectl printed %q)", p.Status.EphemeralContainerStatuses, out)
		})
	})
}

// debugOutput is what the debugger prints: the line it read, then how
// many of the ticker's shells it sees.
var debugOutput = regexp.MustCompile(`dbg:hi\n(\d+)\n`)

// runKubectl runs argv and returns its stdout, or an error carrying its stderr.
func runKubectl(argv []string) (string, error) {
	cmd := osexec.Command(argv[0], argv[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, stderr.String())
	}
	return string(out), nil
}

// runUntil runs argv with stdin until its output satisfies done (then it
// is stopped) or a minute passes (the test fails), and returns the output.
// For commands that do not end by themselves: logs -f, attach.
func runUntil(t *testing.T, argv []string, stdin string, done func(string) bool) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cmd := osexec.CommandContext(ctx, argv[0], argv[1:]...)
	// Stdin stays open after its content: kubectl attach and debug would
	// otherwise end their stdin stream at once. A pipe of the process's
	// own, which Wait closes once it exited: with an io.Reader as Stdin,
	// Wait would also wait for its copy, which never ends.
	stdinW, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out, errOut strings.Builder
	cmd.Stdout = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	cmd.Stderr = writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return errOut.Write(p) })
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	go func() { _, _ = io.WriteString(stdinW, stdin) }()
	read := func() (string, string) { mu.Lock(); defer mu.Unlock(); return out.String(), errOut.String() }
	var exitErr error
	ended := false
	// A command that never ended prints its goroutines (Go's SIGABRT
	// dump) before the context kills it: where it waits.
	defer func() {
		if !t.Failed() || ended {
			return
		}
		_ = cmd.Process.Signal(syscall.SIGABRT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
		_, e := read()
		t.Logf("%s did not end; its stderr after SIGABRT:\n%s", argv[0], e)
	}()
	waitFor(t, time.Minute, strings.Join(argv, " "), func() (bool, string) {
		o, e := read()
		if done(o) {
			return true, ""
		}
		select {
		case exitErr = <-exited:
			ended = true
		default:
		}
		if ended {
			t.Fatalf("%s ended (%v) before its output was complete: stdout %q, stderr %q", strings.Join(argv, " "), exitErr, o, e)
		}
		return false, fmt.Sprintf("stdout %q, stderr %q", o, e)
	})
	o, _ := read()
	return o
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// dumpContainer logs what the runtime holds of a pod's container: its
// state and everything its log file has, which tells output the container
// never wrote from output lost on its way to a stream.
func dumpContainer(t *testing.T, s *stack, podName, name string) {
	t.Helper()
	ctx := context.Background()
	resp, err := s.cri.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.name": podName, "io.kubernetes.container.name": name},
	}})
	if err != nil {
		t.Logf("list the runtime's %s containers: %v", name, err)
		return
	}
	if len(resp.Containers) == 0 {
		t.Logf("the runtime holds no %s container of pod %s", name, podName)
	}
	for _, c := range resp.Containers {
		st, err := s.cri.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id})
		if err != nil {
			t.Logf("status of container %s: %v", c.Id, err)
			continue
		}
		cs := st.GetStatus()
		raw, err := os.ReadFile(cs.GetLogPath())
		t.Logf("container %s (%s): state %s, exit code %d, reason %q, started %s, finished %s; log %s (%v):\n%s",
			c.Id, name, cs.GetState(), cs.GetExitCode(), cs.GetReason(),
			time.Unix(0, cs.GetStartedAt()).UTC().Format(time.RFC3339Nano), time.Unix(0, cs.GetFinishedAt()).UTC().Format(time.RFC3339Nano),
			cs.GetLogPath(), err, raw)
	}
}

// streamFrames are the packages a goroutine serving a stream runs in.
var streamFrames = regexp.MustCompile(`remotecommand|spdystream|httpstream|wsstream|translator|streamproxy\.(\(\*Proxy\)\.forward|pipe)|websocket|proxy\.\(\*UpgradeAwareHandler\)`)

// dumpStreams logs the goroutines of sync and the gateway that serve
// streams (both run with --profiling): where a stalled stream waits.
func dumpStreams(t *testing.T, s *stack) {
	t.Helper()
	for _, p := range []struct {
		name string
		get  func(string) ([]byte, error)
	}{{"sync", s.SyncGet}, {"gateway", s.GatewayGet}} {
		raw, err := p.get("/debug/pprof/goroutine?debug=2")
		if err != nil {
			t.Logf("%s's goroutines: %v", p.name, err)
			continue
		}
		var kept []string
		for _, g := range strings.Split(string(raw), "\n\n") {
			if streamFrames.MatchString(g) {
				kept = append(kept, g)
			}
		}
		t.Logf("%s: %d goroutines serve streams:\n%s", p.name, len(kept), strings.Join(kept, "\n\n"))
	}
}

// grepLog logs the lines of a stack process's log that match re.
func grepLog(t *testing.T, s *stack, name string, re *regexp.Regexp) {
	t.Helper()
	for _, p := range s.Processes() {
		if p.Name != name {
			continue
		}
		raw, err := os.ReadFile(p.LogPath)
		if err != nil {
			t.Logf("%s's log: %v", name, err)
			return
		}
		var kept []string
		for _, line := range strings.Split(string(raw), "\n") {
			if re.MatchString(line) {
				kept = append(kept, line)
			}
		}
		t.Logf("%s's log, the lines matching %s:\n%s", name, re, strings.Join(kept, "\n"))
	}
}
