package test

import (
	"context"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// What a container writes to its terminationMessagePath before it exits
// becomes state.terminated.message (the e2e spec "Container Runtime ...
// should report termination message if TerminationMessagePath is set").
// The test plays the container: it writes the file sync mounted, through
// the mount's host path, then ends the container through the CRI.
func TestTerminationMessageFromFile(t *testing.T) {
	s := startStack(t, stackOptions{})
	uid := s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: termmsg
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.36
    terminationMessagePath: /dev/termination-custom-log
`).GetPods()[0].GetUid()
	s.waitPod("termmsg", 15*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	cs := s.containers(uid)
	if len(cs) != 1 {
		t.Fatalf("containers = %d, want 1", len(cs))
	}
	hostPath := ""
	for _, m := range cs[0].GetMounts() {
		if m.GetContainerPath() == "/dev/termination-custom-log" {
			hostPath = m.GetHostPath()
		}
	}
	if hostPath == "" {
		t.Fatalf("no mount at the termination message path in %v", cs[0].GetMounts())
	}
	if err := os.WriteFile(hostPath, []byte("DONE"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cri.StopContainer(context.Background(), &runtimeapi.StopContainerRequest{ContainerId: cs[0].GetId()}); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	s.waitPod("termmsg", 15*time.Second, `terminated with message "DONE"`, func(p *v1.Pod) bool {
		c := containerStatus(p, "app")
		return c != nil && c.State.Terminated != nil && c.State.Terminated.Message == "DONE"
	})
}

// With terminationMessagePolicy FallbackToLogsOnError a failed container
// that wrote no message gets the tail of its log instead (the e2e spec
// "... should report termination message from log output if
// TerminationMessagePolicy FallbackToLogsOnError is set"); one that
// succeeded gets none.
func TestTerminationMessageFallbackToLogs(t *testing.T) {
	s := startStack(t, stackOptions{})
	s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: fallback
  annotations:
    fake.splitlet.dev/behavior.failed: 'stdout="starting|DONE" crash'
    fake.splitlet.dev/behavior.succeeded: 'stdout="all good" after=100ms exit=0'
spec:
  restartPolicy: Never
  containers:
  - {name: failed, image: busybox:1.36, terminationMessagePolicy: FallbackToLogsOnError}
  - {name: succeeded, image: busybox:1.36, terminationMessagePolicy: FallbackToLogsOnError}
`)
	pod := s.waitPod("fallback", 15*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	for name, want := range map[string]string{"failed": "starting\nDONE\n", "succeeded": ""} {
		c := containerStatus(pod, name)
		if c == nil || c.State.Terminated == nil {
			t.Errorf("%s: status %+v, want terminated", name, c)
			continue
		}
		if c.State.Terminated.Message != want {
			t.Errorf("%s: message %q, want %q", name, c.State.Terminated.Message, want)
		}
	}
}
