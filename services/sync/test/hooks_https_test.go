package test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// postStart and preStop httpGet hooks with scheme HTTPS reach a server with
// a self-signed certificate: sync does not verify it, as the kubelet does
// not (e2e "Container Lifecycle Hook ... should execute poststart https
// hook properly", "... prestop https hook properly").
func TestHTTPSLifecycleHooks(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.URL.Path)
	}))
	defer srv.Close()
	seen := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(paths, ",")
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))

	s := startStack(t, stackOptions{})
	s.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: https-hooks
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: busybox:1.36
    lifecycle:
      postStart: {httpGet: {scheme: HTTPS, host: 127.0.0.1, port: %[1]s, path: /poststart}}
      preStop: {httpGet: {scheme: HTTPS, host: 127.0.0.1, port: %[1]s, path: /prestop}}
`, port))
	waitFor(t, 20*time.Second, "the postStart hook", func() (bool, string) {
		got := seen()
		return got == "/poststart", got
	})
	pod := s.waitPod("https-hooks", 20*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if cs := containerStatus(pod, "app"); cs == nil || cs.RestartCount != 0 || cs.State.Running == nil {
		t.Errorf("app status %+v, want running without restarts", cs)
	}
	if _, err := s.client.Delete(context.Background(), connect.NewRequest(&podv1.DeleteRequest{Namespace: "default", Name: "https-hooks"})); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the preStop hook", func() (bool, string) {
		got := seen()
		return got == "/poststart,/prestop", got
	})
	if got := s.eventReasons("https-hooks"); strings.Contains(got, "Failed") {
		t.Errorf("events %s, want no hook failure", got)
	}
}
