package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

const webPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
  annotations:
    fake.splitlet.dev/behavior.app: "stdout=hello|world"
spec:
  containers:
  - name: app
    image: busybox:1.36
`

// A pod applied through the API runs: Watch reports it Running with its
// container ready; logs, exec and curl-style JSON work on it.
func TestPodRuns(t *testing.T) {
	s := startStack(t, stackOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	watch, err := s.client.Watch(ctx, connect.NewRequest(&podv1.WatchRequest{Namespace: "default", Name: "web"}))
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer watch.Close()

	resp := s.apply(webPod)
	if len(resp.GetPods()) != 1 || resp.GetPods()[0].GetAction() != podv1.ApplyAction_APPLY_ACTION_CREATED || resp.GetPods()[0].GetUid() == "" {
		t.Fatalf("Apply = %v, want one created pod with a UID", resp)
	}
	uid := resp.GetPods()[0].GetUid()

	var running *v1.Pod
	for running == nil && watch.Receive() {
		pod := toPod(t, watch.Msg().GetPod())
		cs := containerStatus(pod, "app")
		if pod.Status.Phase == v1.PodRunning && cs != nil && cs.Ready && cs.State.Running != nil {
			running = pod
		}
	}
	if running == nil {
		t.Fatalf("watch ended before the pod ran: %v", watch.Err())
	}
	if string(running.UID) != uid {
		t.Errorf("watched pod UID = %s, want %s", running.UID, uid)
	}

	// Re-applying the same manifest changes nothing.
	if again := s.apply(webPod); again.GetPods()[0].GetAction() != podv1.ApplyAction_APPLY_ACTION_UNCHANGED {
		t.Errorf("second Apply action = %v, want UNCHANGED", again.GetPods()[0].GetAction())
	}

	logs, err := s.client.Logs(ctx, connect.NewRequest(&podv1.LogsRequest{Namespace: "default", Name: "web"}))
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
	if out.String() != "hello\nworld\n" {
		t.Errorf("Logs = %q, want %q", out.String(), "hello\nworld\n")
	}

	execResp, err := s.client.ExecSync(ctx, connect.NewRequest(&podv1.ExecSyncRequest{Namespace: "default", Name: "web", Command: []string{"echo", "hi"}}))
	if err != nil {
		t.Fatalf("ExecSync: %v", err)
	}
	if string(execResp.Msg.GetStdout()) != "hi\n" || execResp.Msg.GetExitCode() != 0 {
		t.Errorf("ExecSync = %q exit %d, want \"hi\\n\" exit 0", execResp.Msg.GetStdout(), execResp.Msg.GetExitCode())
	}

	// An interactive exec streams through the gateway's streaming proxy
	// into the fake runtime's shell, and its exit code comes back.
	stdout, stderr, code := s.splitctl(t, "echo hi\nexit 3\n", "exec", "-i", "web", "--", "sh")
	if code != 3 || stdout != "hi\n" {
		t.Errorf("splitctl exec -i web -- sh: exit %d, stdout %q, stderr %q; want exit 3 and \"hi\\n\"", code, stdout, stderr)
	}
	// -t needs a terminal on splitctl's stdin: script(1) gives it one, and
	// the fake's shell then prompts and echoes as busybox sh does.
	if script, err := exec.LookPath("script"); err != nil {
		t.Log("no script(1) to give splitctl a terminal: exec -it not tried")
	} else {
		cmd := exec.Command(script, "-qec", filepath.Join(binDir, "splitctl")+" exec -it web -- sh", "/dev/null")
		cmd.Env = append(os.Environ(), "SPLITLET_SERVER="+s.SyncAddr, "SPLITLET_TOKEN="+s.Token)
		cmd.Stdin = strings.NewReader("echo tty-ok\nexit 4\n")
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 4 || !strings.Contains(string(out), "/ # ") || !strings.Contains(string(out), "tty-ok") {
			t.Errorf("splitctl exec -it web -- sh: exit %d, output %q; want the prompt, tty-ok and exit 4", code, out)
		}
	}

	// curl's view: Connect JSON over plain HTTP/1.1.
	hc, base, err := s.SyncDial().Client(false)
	if err != nil {
		t.Fatal(err)
	}
	httpResp, err := hc.Post(base+"/splitlet.pod.v1.PodService/Get", "application/json",
		strings.NewReader(`{"namespace":"default","name":"web"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(httpResp.Body)
	httpResp.Body.Close()
	var got struct {
		Pod v1.Pod `json:"pod"`
	}
	if err := json.Unmarshal(body, &got); err != nil || httpResp.StatusCode != http.StatusOK {
		t.Fatalf("JSON Get: status %s, body %s, err %v", httpResp.Status, body, err)
	}
	if got.Pod.Kind != "Pod" || got.Pod.Name != "web" || got.Pod.Status.Phase != v1.PodRunning {
		t.Errorf("JSON Get pod = kind %q name %q phase %q, want a Running Pod web", got.Pod.Kind, got.Pod.Name, got.Pod.Status.Phase)
	}

	evStream, err := s.client.Events(ctx, connect.NewRequest(&podv1.EventsRequest{Namespace: "default", Name: "web"}))
	if err != nil {
		t.Fatalf("Events: %v", err)
	}
	var reasons []string
	for evStream.Receive() {
		for _, ev := range evStream.Msg().GetEvents() {
			reasons = append(reasons, ev.AsMap()["reason"].(string))
		}
	}
	if err := evStream.Err(); err != nil {
		t.Fatalf("Events stream: %v", err)
	}
	if got := strings.Join(reasons, ","); !strings.Contains(got, "Pulling,Pulled,Created,Started") {
		t.Errorf("event reasons = %s, want Pulling,Pulled,Created,Started in order", got)
	}

	list, err := s.client.List(ctx, connect.NewRequest(&podv1.ListRequest{LabelSelector: "app=web"}))
	if err != nil || len(list.Msg.GetPods()) != 1 {
		t.Errorf("List(app=web) = %d pods, err %v; want 1", len(list.Msg.GetPods()), err)
	}
	list, err = s.client.List(ctx, connect.NewRequest(&podv1.ListRequest{LabelSelector: "app=db"}))
	if err != nil || len(list.Msg.GetPods()) != 0 {
		t.Errorf("List(app=db) = %d pods, err %v; want 0", len(list.Msg.GetPods()), err)
	}
}

// An OnFailure pod whose container exits 0 ends Succeeded and its container
// is not started again.
func TestOnFailurePodSucceeds(t *testing.T) {
	s := startStack(t, stackOptions{})
	uid := s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: job
  annotations:
    fake.splitlet.dev/behavior.work: "after=200ms exit=0"
spec:
  restartPolicy: OnFailure
  containers:
  - name: work
    image: busybox:1.36
`).GetPods()[0].GetUid()
	pod := s.waitPod("job", 15*time.Second, "phase Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	cs := containerStatus(pod, "work")
	if cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 || cs.RestartCount != 0 {
		t.Fatalf("work status = %+v, want terminated with exit 0 and no restart", cs)
	}
	// Once the pod is terminal its worker terminates it and finishes;
	// nothing syncs the pod after that, so what the runtime and the API
	// show then is final: still one container instance.
	s.waitWorkerFinished(uid)
	if got := s.containers(uid); len(got) != 1 {
		t.Errorf("runtime has %d containers for the pod, want 1 (no restart)", len(got))
	}
	if p := s.get("job"); p.Status.Phase != v1.PodSucceeded {
		t.Errorf("phase later = %s, want Succeeded to stick", p.Status.Phase)
	}
	// Following the log of an exited container ends by itself.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	logs, err := s.client.Logs(ctx, connect.NewRequest(&podv1.LogsRequest{Namespace: "default", Name: "job", Follow: true}))
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	for logs.Receive() {
	}
	if err := logs.Err(); err != nil || ctx.Err() != nil {
		t.Errorf("followed log of an exited container: err %v, ctx %v; want a clean end before the deadline", err, ctx.Err())
	}

	// Deleting a finished pod completes at once.
	if _, err := s.client.Delete(ctx, connect.NewRequest(&podv1.DeleteRequest{Namespace: "default", Name: "job"})); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	waitFor(t, 10*time.Second, "finished pod deleted", func() (bool, string) {
		return s.get("job") == nil && len(s.containers(uid)) == 0, "still there"
	})
}

// crasherPod is an Always pod whose one container, app, exits 1 after 50 ms
// every time it starts (the fake runtime's behaviour annotation).
func crasherPod(name string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
  annotations:
    fake.splitlet.dev/behavior.app: "after=50ms exit=1"
spec:
  containers:
  - name: app
    image: busybox:1.36
`
}

// An Always pod whose container keeps crashing shows CrashLoopBackOff, and
// the restart delay grows.
func TestCrashLoopBackOffGrows(t *testing.T) {
	s := startStack(t, stackOptions{backOffBase: 400 * time.Millisecond})
	s.apply(crasherPod("crasher"))
	seen := map[string]bool{}
	var order []string
	waitFor(t, 25*time.Second, "two growing back-off delays", func() (bool, string) {
		pod := s.get("crasher")
		cs := containerStatus(pod, "app")
		if cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
			msg := cs.State.Waiting.Message
			delay := strings.Fields(msg)
			if len(delay) > 1 && !seen[delay[1]] {
				seen[delay[1]] = true
				order = append(order, delay[1])
			}
		}
		return len(order) >= 2, strings.Join(order, ",")
	})
	first, err1 := time.ParseDuration(order[0])
	second, err2 := time.ParseDuration(order[1])
	if err1 != nil || err2 != nil || second <= first {
		t.Fatalf("back-off delays seen in order %v, want a growing delay", order)
	}
	pod := s.get("crasher")
	// Two back-off delays mean at least three attempts: without garbage
	// collection the runtime would hold three instances.
	if cs := containerStatus(pod, "app"); cs == nil || cs.RestartCount < 2 {
		t.Errorf("restartCount = %+v, want at least 2", cs)
	}
	if pod.Status.Phase != v1.PodRunning && pod.Status.Phase != v1.PodPending {
		t.Errorf("phase = %s, want the pod still active under restartPolicy Always", pod.Status.Phase)
	}
	// Dead instances are garbage-collected down to the newest one (plus
	// the one being started, if any).
	waitFor(t, 10*time.Second, "dead containers collected", func() (bool, string) {
		n := len(s.containers(string(pod.UID)))
		return n <= 2, fmt.Sprintf("%d containers", n)
	})
	if cs := containerStatus(s.get("crasher"), "app"); cs.LastTerminationState.Terminated == nil {
		t.Errorf("lastState.terminated missing after garbage collection: %+v", cs)
	}
}

// --max-container-restart-period caps the crash loop's delay, and lowers
// its first delay to the cap, as the kubelet's maxContainerRestartPeriod
// (KubeletCrashLoopBackOffMax) does: with a 10 s base and a 1 s cap the
// container waits 1 s between restarts, every time.
func TestMaxContainerRestartPeriodCapsCrashLoop(t *testing.T) {
	// Later flags win: this cap replaces the harness's 8 s one.
	s := startStack(t, stackOptions{backOffBase: 10 * time.Second, syncArgs: []string{"--max-container-restart-period=1s"}})
	s.apply(crasherPod("capped"))
	var messages []string
	waitFor(t, 25*time.Second, "three restarts", func() (bool, string) {
		cs := containerStatus(s.get("capped"), "app")
		if cs == nil {
			return false, "no status"
		}
		if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" && !slices.Contains(messages, w.Message) {
			messages = append(messages, w.Message)
		}
		return cs.RestartCount >= 3, fmt.Sprintf("restartCount %d, messages %q", cs.RestartCount, messages)
	})
	if len(messages) == 0 {
		t.Fatal("no CrashLoopBackOff state seen between the restarts")
	}
	for _, m := range messages {
		if !strings.HasPrefix(m, "back-off 1s restarting failed container=app") {
			t.Errorf("waiting message %q, want every delay at the 1s cap", m)
		}
	}
}
