package test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A failing readiness probe keeps the container unready and the pod not
// Ready; a failing liveness probe restarts the container.
func TestProbes(t *testing.T) {
	s := startStack(t, stackOptions{backOffBase: 200 * time.Millisecond})
	s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: probed
  annotations:
    fake.splitlet.dev/behavior.unready: "exec-fail=always"
    fake.splitlet.dev/behavior.dying: "exec-fail=always"
spec:
  containers:
  - name: ready
    image: busybox:1.36
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
  - name: unready
    image: busybox:1.36
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
  - name: dying
    image: busybox:1.36
    livenessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
      failureThreshold: 1
`)
	pod := s.waitPod("probed", 20*time.Second, "ready container ready, liveness restart", func(p *v1.Pod) bool {
		r, d := containerStatus(p, "ready"), containerStatus(p, "dying")
		return r != nil && r.Ready && d != nil && d.RestartCount >= 1
	})
	if cs := containerStatus(pod, "unready"); cs == nil || cs.Ready || cs.State.Running == nil {
		t.Errorf("unready container = %+v, want running and not ready", cs)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
			t.Errorf("pod Ready is True although a container fails its readiness probe")
		}
	}
}
