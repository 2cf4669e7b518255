package test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// Without an API server (no --kubeconfig), a pod that references a secret
// or configMap is refused at Apply naming the field, instead of being
// accepted and failing at container start; nothing reaches the runtime.
func TestAPIObjectsRefusedWithoutAnAPIServer(t *testing.T) {
	s := startStack(t, stackOptions{})
	_, err := s.client.Apply(context.Background(), connect.NewRequest(&podv1.ApplyRequest{Manifest: `apiVersion: v1
kind: Pod
metadata: {name: needs-secret}
spec:
  volumes: [{name: conf, configMap: {name: app}}]
  containers:
  - name: app
    image: busybox:1.36
    env: [{name: PW, valueFrom: {secretKeyRef: {name: s, key: pw}}}]
`}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("Apply error = %v, want InvalidArgument", err)
	}
	for _, want := range []string{"spec.volumes[0].configMap", "spec.containers[0].env[0].valueFrom.secretKeyRef", "--kubeconfig"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Apply error %q does not name %q", err, want)
		}
	}
	if p := s.get("needs-secret"); p != nil {
		t.Error("the refused pod was stored")
	}
	if n := len(s.sandboxes()); n != 0 {
		t.Errorf("runtime has %d sandboxes, want none", n)
	}
}
