package cm

import (
	"os"
	"path/filepath"
	"testing"
)

func mkdirs(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestRemoveOnCgroupV1(t *testing.T) {
	root := t.TempDir()
	pod := filepath.Join("kubepods", "besteffort", "podu1")
	other := filepath.Join("kubepods", "burstable", "podu2")
	mkdirs(t, filepath.Join(root, "pids", pod), filepath.Join(root, "memory", pod),
		filepath.Join(root, "cpu,cpuacct", pod), filepath.Join(root, "pids", other))
	if err := os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")); err != nil {
		t.Fatal(err)
	}
	// A container cgroup left inside one hierarchy keeps the pod there.
	busy := filepath.Join(root, "memory", pod, "ctr")
	mkdirs(t, busy)

	if err := New(root).Remove("u1"); err == nil {
		t.Error("Remove of a pod whose memory cgroup is not empty gave no error")
	}
	for _, h := range []string{"pids", "cpu,cpuacct"} {
		if exists(filepath.Join(root, h, pod)) {
			t.Errorf("%s: pod cgroup not removed", h)
		}
	}
	if !exists(busy) {
		t.Error("a non-empty pod cgroup was removed with its child")
	}
	if !exists(filepath.Join(root, "pids", other)) {
		t.Error("another pod's cgroup was removed")
	}
	// Once the child is gone, the next try removes the rest; then there
	// is nothing left and that is no error.
	if err := os.Remove(busy); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := New(root).Remove("u1"); err != nil {
			t.Fatalf("try %d: %v", i, err)
		}
	}
	if exists(filepath.Join(root, "memory", pod)) {
		t.Error("memory: pod cgroup not removed on retry")
	}
}

func TestRemoveOnCgroupV2(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	guaranteed := filepath.Join(root, "kubepods", "podg1")
	mkdirs(t, guaranteed)
	if err := New(root).Remove("g1"); err != nil {
		t.Fatal(err)
	}
	if exists(guaranteed) {
		t.Error("a Guaranteed pod's cgroup (directly under kubepods) was not removed")
	}
	if !exists(filepath.Join(root, "kubepods")) {
		t.Error("the kubepods cgroup itself was removed")
	}
}

func TestRemoveWithoutCgroupfs(t *testing.T) {
	if err := New(filepath.Join(t.TempDir(), "absent")).Remove("u1"); err == nil {
		t.Error("a missing cgroup root gave no error")
	}
}
