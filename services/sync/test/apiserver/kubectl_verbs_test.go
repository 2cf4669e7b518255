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
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	_, _, node, _ := nodeAPIStack(t, pki, endpoint)
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
		// The ephemeral container shares the ticker's process namespace
		// (--target): it sees the ticker's shell loop.
		out := runUntil(t, kubectl("debug", "-i", pod.Name, "--image="+image, "--image-pull-policy=Never",
			"-c", "debugger", "--target=ticker", "--", "sh", "-c", "read l; echo dbg:$l; ps -o args | grep -c '[w]hile true'"),
			"hi\n", func(out string) bool { return debugOutput.MatchString(out) })
		if m := debugOutput.FindStringSubmatch(out); m[1] != "1" {
			t.Errorf("the debugger sees %s ticker shells, want 1 (its process namespace is the ticker's): %q", m[1], out)
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
	// otherwise end their stdin stream at once.
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	cmd.Stdin = stdinR
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
