package conformance

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitlet/splitlet/internal/stack"
)

// TestWatchNodeEndsTheRunWhenAProcessDies: a node process that ends
// mid-run cancels the suite's context with its exit as the cause, and the
// run's error names it; a node that lives on leaves the suite alone.
func TestWatchNodeEndsTheRunWhenAProcessDies(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep binary to stand in for a node process: %v", err)
	}
	dir := t.TempDir()
	start := func(name string) *stack.Process {
		p, err := stack.StartProcess(context.Background(), name, sleep, filepath.Join(dir, name+".log"), nil, 0, "300")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Stop(5 * time.Second) })
		return p
	}
	gateway, sync := start("gateway"), start("sync")

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	watchNode(ctx, []*stack.Process{gateway, sync}, cancel)
	if err := nodeDied(ctx, errors.New("suite failed")); err == nil || err.Error() != "suite failed" {
		t.Fatalf("nodeDied with every process running = %v, want the suite's own error", err)
	}

	sync.Kill()
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the suite's context outlived the sync process by a minute")
	}
	err = nodeDied(ctx, nil)
	if !errors.Is(err, stack.ErrExited) || !strings.Contains(err.Error(), "sync") {
		t.Fatalf("nodeDied after sync was killed = %v, want sync's exit", err)
	}
	if gateway.Exited() != nil {
		t.Errorf("gateway ended too: %v", gateway.Exited())
	}
}
