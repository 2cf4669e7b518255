package test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Admission judges pods against the node sync runs as: pods selecting it by
// kubernetes.io/hostname = --node-name (nodeSelector or required node
// affinity, as the e2e networking specs pin their pods) or by splitlet's
// agent label are admitted and run, and one selecting another hostname is
// refused NodeAffinity.
func TestAdmissionNodeIsTheNodeSyncRunsAs(t *testing.T) {
	s := admissionStack(t, stackOptions{}, func(root string) string {
		return admissionConfig(root, "2", "1Gi", 10, "")
	})
	s.apply(`apiVersion: v1
kind: Pod
metadata: {name: by-selector}
spec:
  nodeSelector: {kubernetes.io/hostname: node1, splitlet.dev/agent: splitlet}
  containers:
  - {name: app, image: busybox:1.36}
`)
	s.apply(`apiVersion: v1
kind: Pod
metadata: {name: by-affinity}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields:
          - {key: metadata.name, operator: In, values: [node1]}
          matchExpressions:
          - {key: kubernetes.io/hostname, operator: In, values: [node1]}
  containers:
  - {name: app, image: busybox:1.36}
`)
	s.apply(`apiVersion: v1
kind: Pod
metadata: {name: elsewhere}
spec:
  nodeSelector: {kubernetes.io/hostname: node2}
  containers:
  - {name: app, image: busybox:1.36}
`)
	for _, name := range []string{"by-selector", "by-affinity"} {
		s.waitPod(name, 20*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	}
	pod := s.waitPod("elsewhere", 20*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if pod.Status.Reason != "NodeAffinity" {
		t.Errorf("reason = %q, want NodeAffinity", pod.Status.Reason)
	}
}
