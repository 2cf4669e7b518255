package test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// A pod setting an unsafe sysctl the operator did not allow ends Failed
// with the kubelet's SysctlForbidden before anything of it reaches the
// runtime, even with no admission service (the e2e spec "Sysctls should not
// launch unsafe, but not explicitly enabled sysctls on the node"), while
// one allowed by --allowed-unsafe-sysctls and a safe one written with
// slashes run.
func TestUnsafeSysctlsNeedTheOperatorsLeave(t *testing.T) {
	s := startStack(t, stackOptions{syncArgs: []string{"--allowed-unsafe-sysctls=kernel.msgmnb,net.core.*"}})
	manifest := func(name, sysctl string) string {
		return `apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:
  securityContext:
    sysctls:
    - {name: ` + sysctl + `, value: "1"}
  containers:
  - name: app
    image: busybox:1.36
`
	}
	uid := s.apply(manifest("forbidden", "kernel.msgmax")).GetPods()[0].GetUid()
	s.apply(manifest("allowed", "net.core.somaxconn"))
	s.apply(manifest("safe", "kernel/shm_rmid_forced"))

	pod := s.waitPod("forbidden", 15*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if want := `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted`; pod.Status.Reason != "SysctlForbidden" || pod.Status.Message != want {
		t.Errorf("status %s/%q, want SysctlForbidden/%q", pod.Status.Reason, pod.Status.Message, want)
	}
	if reasons := s.eventReasons("forbidden"); !strings.Contains(reasons, "SysctlForbidden") {
		t.Errorf("events = %s, want a SysctlForbidden event", reasons)
	}
	for _, name := range []string{"allowed", "safe"} {
		s.waitPod(name, 15*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	}
	if n := s.sandboxesOf(uid); n != 0 {
		t.Errorf("%d sandboxes created for the refused pod", n)
	}
}
