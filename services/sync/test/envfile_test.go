package test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// An env var's valueFrom.fileKeyRef reads a key from an env file in an
// emptyDir volume (EnvFiles, on by default in v1.36). The fake runtime runs
// no commands, so the test plays the init container that writes the file,
// through the volume's host directory. Deterministic without timing: until
// the file is there the app container waits in CreateContainerConfigError,
// with the kubelet's message, and every sync tries again; once it is there
// the next sync creates the container, whose fake behavior (exit code 7)
// comes from the file's value.
func TestEnvFileKeyRef(t *testing.T) {
	s := startStack(t, stackOptions{})
	uid := s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: envfile
  annotations:
    fake.splitlet.dev/behavior.setup: 'after=50ms exit=0'
spec:
  restartPolicy: Never
  volumes:
  - name: config
    emptyDir: {}
  initContainers:
  - name: setup
    image: busybox:1.36
    volumeMounts:
    - {name: config, mountPath: /config}
  containers:
  - name: app
    image: busybox:1.36
    env:
    - name: SPLITLET_FAKE_BEHAVIOR
      valueFrom:
        fileKeyRef: {volumeName: config, path: app.env, key: BEHAVIOR}
    - name: OPTIONAL_MISSING
      valueFrom:
        fileKeyRef: {volumeName: config, path: app.env, key: NOT_THERE, optional: true}
`).GetPods()[0].GetUid()

	pod := s.waitPod("envfile", 20*time.Second, "app waiting in CreateContainerConfigError", func(p *v1.Pod) bool {
		c := containerStatus(p, "app")
		return c != nil && c.State.Waiting != nil && c.State.Waiting.Reason == "CreateContainerConfigError"
	})
	msg := containerStatus(pod, "app").State.Waiting.Message
	for _, want := range []string{"spec.containers[0].env[0].valueFrom.fileKeyRef (SPLITLET_FAKE_BEHAVIOR)", "couldn't parse env file", "app.env"} {
		if !strings.Contains(msg, want) {
			t.Errorf("waiting message %q does not say %q", msg, want)
		}
	}

	// The volume's host directory, from the init container's mount.
	dir := ""
	for _, c := range s.containers(uid) {
		for _, m := range c.GetMounts() {
			if m.GetContainerPath() == "/config" {
				dir = m.GetHostPath()
			}
		}
	}
	if dir == "" {
		t.Fatal("no container mounts the config volume")
	}
	content := "# written by the init container\nBEHAVIOR='crash exit=7'\nOTHER='x'\n"
	if err := os.WriteFile(filepath.Join(dir, "app.env"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}

	s.waitPod("envfile", 20*time.Second, "app exited 7, as scripted by the env file", func(p *v1.Pod) bool {
		c := containerStatus(p, "app")
		return c != nil && c.State.Terminated != nil && c.State.Terminated.ExitCode == 7
	})
}
