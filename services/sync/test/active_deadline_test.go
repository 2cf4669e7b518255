package test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// An Apply that lowers a running pod's activeDeadlineSeconds fails the pod
// once it has been active that long: phase Failed, reason
// DeadlineExceeded, its containers stopped (the e2e spec "Pods should allow
// activeDeadlineSeconds to be updated").
func TestActiveDeadlineSecondsLowered(t *testing.T) {
	s := startStack(t, stackOptions{})
	manifest := func(deadline string) string {
		return `apiVersion: v1
kind: Pod
metadata:
  name: deadline
spec:
  activeDeadlineSeconds: ` + deadline + `
  containers:
  - {name: app, image: busybox:1.36}
`
	}
	uid := s.apply(manifest("3600")).GetPods()[0].GetUid()
	s.waitPod("deadline", 15*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	s.apply(manifest("2"))
	pod := s.waitPod("deadline", 20*time.Second, "Failed with DeadlineExceeded", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "DeadlineExceeded"
	})
	if pod.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("message = %q", pod.Status.Message)
	}
	waitFor(t, 15*time.Second, "the container stopped", func() (bool, string) {
		cs := s.containers(uid)
		for _, c := range cs {
			if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return false, "running"
			}
		}
		return len(cs) > 0, "no container"
	})
	if got := s.eventReasons("deadline"); !strings.Contains(got, "DeadlineExceeded") {
		t.Errorf("events %s lack DeadlineExceeded", got)
	}
}
