package test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// Init containers run one after the other, each to completion, before the
// app container starts.
func TestInitContainersRunInOrder(t *testing.T) {
	s := startStack(t, stackOptions{})
	uid := s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: inits
  annotations:
    fake.splitlet.dev/behavior.init-a: "after=200ms exit=0"
    fake.splitlet.dev/behavior.init-b: "after=200ms exit=0"
spec:
  initContainers:
  - {name: init-a, image: busybox:1.36}
  - {name: init-b, image: busybox:1.36}
  containers:
  - {name: app, image: busybox:1.36}
`).GetPods()[0].GetUid()
	s.waitPod("inits", 15*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	got := s.containers(uid)
	var names []string
	for _, c := range got {
		names = append(names, c.GetMetadata().GetName())
	}
	if strings.Join(names, ",") != "init-a,init-b,app" {
		t.Fatalf("containers in creation order = %v, want init-a,init-b,app", names)
	}
	for i := 0; i < 2; i++ {
		if got[i].GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || got[i].GetExitCode() != 0 {
			t.Errorf("%s: state %v exit %d, want exited 0", names[i], got[i].GetState(), got[i].GetExitCode())
		}
		if next := got[i+1]; next.GetCreatedAt() < got[i].GetFinishedAt() {
			t.Errorf("%s was created before %s finished", names[i+1], names[i])
		}
	}
}

// A failing init container under restartPolicy Never fails the pod and the
// app container is never created.
func TestFailingInitContainerFailsPod(t *testing.T) {
	s := startStack(t, stackOptions{})
	uid := s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: badinit
  annotations:
    fake.splitlet.dev/behavior.setup: "after=100ms exit=3"
spec:
  restartPolicy: Never
  initContainers:
  - {name: setup, image: busybox:1.36}
  containers:
  - {name: app, image: busybox:1.36}
`).GetPods()[0].GetUid()
	pod := s.waitPod("badinit", 15*time.Second, "Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if cs := containerStatus(pod, "setup"); cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 3 {
		t.Errorf("setup status = %+v, want terminated with exit 3", cs)
	}
	// The failed pod's worker finishes: nothing can create the app
	// container after that.
	s.waitWorkerFinished(uid)
	for _, c := range s.containers(uid) {
		if c.GetMetadata().GetName() == "app" {
			t.Fatalf("app container was created although init failed")
		}
	}
}

// Delete honours the grace period: a container ignoring SIGTERM with a 1 s
// grace period is stopped no sooner than 1 s later, and the pod is then
// removed from the API and the runtime.
func TestDeleteHonoursGracePeriod(t *testing.T) {
	s := startStack(t, stackOptions{})
	uid := s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: stubborn
  annotations:
    fake.splitlet.dev/behavior.app: "ignore-sigterm"
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: busybox:1.36}
`).GetPods()[0].GetUid()
	s.waitPod("stubborn", 15*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	podDirs := []string{
		filepath.Join(s.dir, "logs", "default_stubborn_"+uid),
		filepath.Join(s.dir, "state", "pods", uid),
	}
	for _, dir := range podDirs {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("pod directory before delete: %v", err)
		}
	}
	start := time.Now()
	resp, err := s.client.Delete(context.Background(), connect.NewRequest(&podv1.DeleteRequest{Namespace: "default", Name: "stubborn"}))
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if p := toPod(t, resp.Msg.GetPod()); p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 1 {
		t.Fatalf("deleted pod deletionTimestamp %v grace %v, want set and 1", p.DeletionTimestamp, p.DeletionGracePeriodSeconds)
	}
	var stopped time.Duration
	waitFor(t, 15*time.Second, "container stopped", func() (bool, string) {
		for _, c := range s.containers(uid) {
			if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return false, "running"
			}
		}
		stopped = time.Since(start)
		return true, ""
	})
	if stopped < time.Second {
		t.Errorf("container stopped %s after Delete, want at least the 1 s grace period", stopped)
	}
	waitFor(t, 15*time.Second, "pod gone from API and runtime", func() (bool, string) {
		return s.get("stubborn") == nil && len(s.containers(uid)) == 0 && len(s.sandboxes()) == 0, "still there"
	})
	// Its log directory and state directory are removed with it.
	for _, dir := range podDirs {
		waitFor(t, 5*time.Second, dir+" removed", func() (bool, string) {
			_, err := os.Stat(dir)
			return os.IsNotExist(err), fmt.Sprint(err)
		})
	}
}

// Restarting splitlet-sync adopts running containers: same IDs, no restart.
func TestRestartKeepsContainers(t *testing.T) {
	s := startStack(t, stackOptions{})
	uid := s.apply(webPod).GetPods()[0].GetUid()
	before := s.waitPod("web", 15*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	id := containerStatus(before, "app").ContainerID

	s.restartSync()
	// Six resyncs of the restarted sync, 500 ms apart once the pod runs
	// steadily, span 2.5 s: more than the 2 s housekeeping period, whose
	// ticker started before the pod's first sync. The adopted pod was synced
	// again and again and housekeeping had its pass.
	s.WaitResyncs(t, 6, 30*time.Second)
	after := s.waitPod("web", 15*time.Second, "Running again", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if string(after.UID) != uid {
		t.Errorf("UID after restart = %s, want %s", after.UID, uid)
	}
	cs := containerStatus(after, "app")
	if cs.ContainerID != id || cs.RestartCount != 0 {
		t.Errorf("after restart container %s restartCount %d, want %s and 0", cs.ContainerID, cs.RestartCount, id)
	}
	if n := len(s.containers(uid)); n != 1 {
		t.Errorf("runtime has %d containers for the pod, want 1", n)
	}
	if n := len(s.sandboxes()); n != 1 {
		t.Errorf("runtime has %d sandboxes, want 1", n)
	}
}

// An invalid manifest is rejected with the document and field path, nothing
// of it is applied, and no sandbox is created.
func TestInvalidManifestRejected(t *testing.T) {
	s := startStack(t, stackOptions{})
	_, err := s.client.Apply(context.Background(), connect.NewRequest(&podv1.ApplyRequest{Manifest: `apiVersion: v1
kind: Pod
metadata: {name: fine}
spec:
  containers: [{name: app, image: busybox:1.36}]
---
apiVersion: v1
kind: Pod
metadata: {name: broken}
spec:
  containers: [{name: app}]
`}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("Apply error = %v, want InvalidArgument", err)
	}
	for _, want := range []string{"document 1", "spec.containers[0].image"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Apply error %q does not name %q", err, want)
		}
	}
	// A pod applied after it runs: updates reach the sync loop in order, so
	// whatever the rejected Apply might have wrongly started has been
	// handed to sync by then.
	marker := s.apply(webPod).GetPods()[0].GetUid()
	s.waitPod("web", 15*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if p := s.get("fine"); p != nil {
		t.Errorf("the valid document of a rejected manifest was applied")
	}
	for _, sb := range s.sandboxes() {
		if uid := sb.GetLabels()["io.kubernetes.pod.uid"]; uid != marker {
			t.Errorf("runtime has a sandbox of pod %s, want only the later pod's", uid)
		}
	}
}

// An update changing more than images is refused as the API server would;
// an image change is accepted.
func TestApplyUpdateRules(t *testing.T) {
	s := startStack(t, stackOptions{})
	s.apply(webPod)
	_, err := s.client.Apply(context.Background(), connect.NewRequest(&podv1.ApplyRequest{
		Manifest: strings.Replace(webPod, "    image: busybox:1.36\n", "    image: busybox:1.36\n    workingDir: /tmp\n", 1),
	}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "spec") {
		t.Fatalf("Apply changing workingDir error = %v, want InvalidArgument naming spec", err)
	}
	resp := s.apply(strings.Replace(webPod, "busybox:1.36", "busybox:1.37", 1))
	if resp.GetPods()[0].GetAction() != podv1.ApplyAction_APPLY_ACTION_CONFIGURED {
		t.Fatalf("Apply changing the image action = %v, want CONFIGURED", resp.GetPods()[0].GetAction())
	}
	s.waitPod("web", 15*time.Second, "running the new image", func(p *v1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.State.Running != nil && strings.Contains(cs.Image, "busybox:1.37")
	})
}

// Static pods from the manifest directory run under a node-qualified name;
// an invalid file starts nothing; removing the file removes the pod.
func TestStaticPods(t *testing.T) {
	s := startStack(t, stackOptions{manifestDir: true})
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(s.manifestDir(), name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers: [{name: app}]\n")
	write("static.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: static}\nspec:\n  containers: [{name: app, image: busybox:1.36}]\n")
	pod := s.waitPod("static-node1", 15*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if pod.Annotations["kubernetes.io/config.source"] != "file" {
		t.Errorf("config.source = %q, want file", pod.Annotations["kubernetes.io/config.source"])
	}
	if s.get("bad-node1") != nil {
		t.Errorf("the pod of an invalid manifest exists")
	}
	if n := len(s.sandboxes()); n != 1 {
		t.Errorf("runtime has %d sandboxes, want only the valid static pod's", n)
	}
	if err := os.Remove(filepath.Join(s.manifestDir(), "static.yaml")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "static pod removed", func() (bool, string) {
		return s.get("static-node1") == nil && len(s.sandboxes()) == 0, "still there"
	})
}

// Static pods from --manifest-url run, carry config.source http, cannot be
// deleted through the PodService, and go when the URL stops serving them.
func TestManifestURLPods(t *testing.T) {
	var mu sync.Mutex
	body := "apiVersion: v1\nkind: Pod\nmetadata: {name: fromurl}\nspec:\n  containers: [{name: app, image: busybox:1.36}]\n"
	var token string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		token = r.Header.Get("X-Token")
		_, _ = w.Write([]byte(body))
	}))
	defer ts.Close()
	s := startStack(t, stackOptions{syncArgs: []string{"--manifest-url=" + ts.URL, "--manifest-url-header=X-Token:s3cret", "--http-check-frequency=300ms"}})
	pod := s.waitPod("fromurl-node1", 15*time.Second, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if src := pod.Annotations["kubernetes.io/config.source"]; src != "http" {
		t.Errorf("config.source = %q, want http", src)
	}
	mu.Lock()
	if token != "s3cret" {
		t.Errorf("X-Token sent = %q, want s3cret", token)
	}
	body = ""
	mu.Unlock()
	_, err := s.client.Delete(context.Background(), connect.NewRequest(&podv1.DeleteRequest{Namespace: "default", Name: "fromurl-node1"}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Errorf("Delete of a static pod from the URL: %v, want FailedPrecondition", err)
	}
	waitFor(t, 20*time.Second, "the URL's pod removed", func() (bool, string) {
		return s.get("fromurl-node1") == nil && len(s.sandboxes()) == 0, "still there"
	})
}
