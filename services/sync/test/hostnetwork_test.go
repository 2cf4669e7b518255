package test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// A host-network pod reports the node's IP as its pod IP, and its
// containers' downward API env status.podIP, status.podIPs and
// status.hostIP all resolve to it (the e2e spec "Downward API should
// provide host IP and pod IP as an env var if pod uses host network").
// The fake container prints its environment through its behavior script,
// which sync expands like any env value.
func TestHostNetworkPodIPIsTheNodeIP(t *testing.T) {
	const nodeIP = "192.0.2.10"
	s := startStack(t, stackOptions{syncArgs: []string{"--node-ip=" + nodeIP}})
	s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: hostnet
spec:
  hostNetwork: true
  containers:
  - name: app
    image: busybox:1.36
    env:
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    - name: POD_IPS
      valueFrom: {fieldRef: {fieldPath: status.podIPs}}
    - name: HOST_IP
      valueFrom: {fieldRef: {fieldPath: status.hostIP}}
    - name: SPLITLET_FAKE_BEHAVIOR
      value: 'stdout="pod=$(POD_IP)|ips=$(POD_IPS)|host=$(HOST_IP)"'
`)
	pod := s.waitPod("hostnet", 15*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if pod.Status.PodIP != nodeIP || pod.Status.HostIP != nodeIP {
		t.Errorf("status podIP %q hostIP %q, want both %s", pod.Status.PodIP, pod.Status.HostIP, nodeIP)
	}

	logs, err := s.client.Logs(context.Background(), connect.NewRequest(&podv1.LogsRequest{Namespace: "default", Name: "hostnet"}))
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	var out bytes.Buffer
	for logs.Receive() {
		out.Write(logs.Msg().GetData())
	}
	if err := logs.Err(); err != nil {
		t.Fatalf("Logs stream: %v", err)
	}
	want := "pod=" + nodeIP + "\nips=" + nodeIP + "\nhost=" + nodeIP + "\n"
	if out.String() != want {
		t.Errorf("container env printed %q, want %q", out.String(), want)
	}
}
