package stack

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// TestSuperviseRestartsACrashedProcess: sync and then the gateway are
// killed with SIGKILL, as a crash would end them; Supervise starts each
// again after its back-off, and the pod applied before the crashes is still
// there and Running, served by the new sync over the new gateway.
func TestSuperviseRestartsACrashedProcess(t *testing.T) {
	s := startStack(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const pod = "survivor"
	manifest := "apiVersion: v1\nkind: Pod\nmetadata: {name: " + pod + ", namespace: default}\n" +
		"spec:\n  containers: [{name: app, image: busybox:1.36}]\n"
	if _, err := s.PodService().Apply(ctx, connect.NewRequest(&podv1.ApplyRequest{Manifest: manifest})); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	waitRunning := func(when string) {
		t.Helper()
		WaitFor(t, time.Minute, "pod "+pod+" Running "+when, func() (bool, string) {
			resp, err := s.PodService().Get(ctx, connect.NewRequest(&podv1.GetRequest{Namespace: "default", Name: pod}))
			if err != nil {
				return false, err.Error()
			}
			phase := resp.Msg.GetPod().GetFields()["status"].GetStructValue().GetFields()["phase"].GetStringValue()
			return phase == "Running", "phase " + phase
		})
	}
	waitRunning("before the crashes")

	var mu sync.Mutex
	var restarts []Restart
	superviseCtx, stopSupervise := context.WithCancel(ctx)
	supervised := make(chan struct{})
	go func() {
		defer close(supervised)
		s.Supervise(superviseCtx, Backoff{Initial: 50 * time.Millisecond, Max: time.Second, ResetAfter: time.Minute}, func(r Restart) {
			mu.Lock()
			defer mu.Unlock()
			restarts = append(restarts, r)
		})
	}()
	defer func() {
		stopSupervise()
		<-supervised
	}()

	for i, p := range []*Process{s.Sync, s.Gateway} {
		old := p.Pid()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %s: %v", p.Name, err)
		}
		WaitFor(t, time.Minute, p.Name+" restarted and ready", func() (bool, string) {
			mu.Lock()
			defer mu.Unlock()
			if len(restarts) <= i {
				return false, "no restart reported yet"
			}
			r := restarts[i]
			if r.Process != p || r.Err != nil {
				return false, "restart of " + r.Process.Name + ": " + errString(r.Err)
			}
			return true, ""
		})
		if p.Pid() == old || p.Exited() != nil {
			t.Fatalf("%s: pid %d after the restart (was %d), exited: %v", p.Name, p.Pid(), old, p.Exited())
		}
		mu.Lock()
		exit := restarts[i].Exit
		mu.Unlock()
		if !strings.Contains(exit.Error(), "killed") {
			t.Errorf("%s's reported exit does not say it was killed: %v", p.Name, exit)
		}
		waitRunning("after " + p.Name + " was killed")
	}

	stopSupervise()
	<-supervised
	if err := s.Alive(); err != nil {
		t.Errorf("after Supervise returned: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(restarts) != 2 {
		t.Errorf("%d restarts reported, want 2 (sync, gateway)", len(restarts))
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
