package test

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A container with its own restartPolicy Never in a pod with restartPolicy
// Always is not restarted once it fails, while its siblings are; the pod
// stays Running (the kubelet v1.36's ContainerRestartRules, on by default).
func TestContainerRestartPolicyNeverInAlwaysPod(t *testing.T) {
	s := startStack(t, stackOptions{backOffBase: 100 * time.Millisecond})
	uid := s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: mixed
  annotations:
    fake.splitlet.dev/behavior.once: "after=100ms exit=1"
    fake.splitlet.dev/behavior.tick: "after=100ms exit=0"
spec:
  restartPolicy: Always
  containers:
  - {name: once, image: busybox:1.36, restartPolicy: Never}
  - {name: tick, image: busybox:1.36}
  - {name: app, image: busybox:1.36}
`).GetPods()[0].GetUid()
	// tick restarts under the pod's Always; by its third run, once would
	// have been restarted too had its own Never not held it.
	pod := s.waitPod("mixed", 30*time.Second, "tick restarted twice", func(p *v1.Pod) bool {
		tick := containerStatus(p, "tick")
		return tick != nil && tick.RestartCount >= 2
	})
	once := containerStatus(pod, "once")
	if once == nil || once.RestartCount != 0 || once.State.Terminated == nil || once.State.Terminated.ExitCode != 1 {
		t.Errorf("once = %+v, want terminated with exit code 1 and never restarted", once)
	}
	if pod.Status.Phase != v1.PodRunning {
		t.Errorf("phase = %s, want Running (app runs, tick restarts)", pod.Status.Phase)
	}
	instances := 0
	for _, c := range s.containers(uid) {
		if c.GetMetadata().GetName() == "once" {
			instances++
		}
	}
	if instances != 1 {
		t.Errorf("%d instances of once in the runtime, want 1", instances)
	}
}

// A container whose exit matches its RestartAllContainers rule restarts the
// whole pod in place: every container is removed and started again, init
// containers first, in the same sandbox (the kubelet v1.36's
// RestartAllContainersOnContainerExits, on by default).
func TestRestartAllContainersInPlace(t *testing.T) {
	s := startStack(t, stackOptions{backOffBase: 100 * time.Millisecond})
	uid := s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: inplace
  annotations:
    fake.splitlet.dev/behavior.setup: "after=50ms exit=0"
    fake.splitlet.dev/behavior.trigger: "after=1s exit=42"
spec:
  restartPolicy: Never
  initContainers:
  - {name: setup, image: busybox:1.36}
  containers:
  - {name: app, image: busybox:1.36}
  - name: trigger
    image: busybox:1.36
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
`).GetPods()[0].GetUid()
	first := s.waitPod("inplace", 15*time.Second, "app running", func(p *v1.Pod) bool {
		app := containerStatus(p, "app")
		return p.Status.Phase == v1.PodRunning && app != nil && app.State.Running != nil
	})
	firstApp := containerStatus(first, "app").ContainerID
	var sandbox string
	for _, sb := range s.sandboxes() {
		if sb.GetMetadata().GetUid() == uid {
			sandbox = sb.GetId()
		}
	}

	// The trigger exits with 42 after a second: app is killed and removed
	// although it runs under restartPolicy Never, setup runs again, and
	// everything comes back with one more restart counted.
	pod := s.waitPod("inplace", 20*time.Second, "app running again after an in-place restart", func(p *v1.Pod) bool {
		app, setup := containerStatus(p, "app"), containerStatus(p, "setup")
		return app != nil && app.State.Running != nil && app.ContainerID != firstApp && app.RestartCount >= 1 &&
			setup != nil && setup.RestartCount >= 1
	})
	if pod.Status.Phase != v1.PodRunning {
		t.Errorf("phase = %s, want Running", pod.Status.Phase)
	}
	if c := findCondition(pod, v1.AllContainersRestarting); c == nil {
		t.Errorf("conditions = %+v, want an AllContainersRestarting condition", pod.Status.Conditions)
	}
	if c := findCondition(pod, v1.PodInitialized); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("Initialized = %+v, want True throughout", c)
	}
	var sandboxes []string
	for _, sb := range s.sandboxes() {
		if sb.GetMetadata().GetUid() == uid {
			sandboxes = append(sandboxes, sb.GetId())
		}
	}
	if len(sandboxes) != 1 || sandboxes[0] != sandbox {
		t.Errorf("sandboxes = %v, want the first one (%s) kept", sandboxes, sandbox)
	}
	// The first app instance is gone from the runtime, not just stopped.
	for _, c := range s.containers(uid) {
		if fmt.Sprintf("fake://%s", c.GetId()) == firstApp || c.GetId() == firstApp {
			t.Errorf("first app instance %s still in the runtime", firstApp)
		}
	}
}

func findCondition(pod *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
