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

// TestRemove lays out cgroupfs as plain directories under a temp root:
// rmdir on them behaves like cgroupfs for empty and non-empty cgroups (a
// child directory stands for a container cgroup still inside the pod's).
// Paths are relative to the root.
func TestRemove(t *testing.T) {
	const (
		beV1   = "kubepods/besteffort/podu1"
		buV1   = "kubepods/burstable/podu1"
		guarV1 = "kubepods/podu1"
	)
	for _, tc := range []struct {
		desc    string
		v2      bool
		dirs    []string          // made before Remove
		links   map[string]string // name -> target, made before Remove
		wantErr bool
		gone    []string // must not exist after Remove
		kept    []string // must exist after Remove
	}{
		{
			desc: "v1: the pod level removed in every hierarchy, named or unified",
			dirs: []string{"pids/" + beV1, "memory/" + beV1, "cpu,cpuacct/" + beV1, "unified/" + beV1, "systemd/" + beV1},
			gone: []string{"pids/" + beV1, "memory/" + beV1, "cpu,cpuacct/" + beV1, "unified/" + beV1, "systemd/" + beV1},
			kept: []string{"pids/kubepods/besteffort", "memory/kubepods"},
		},
		{
			desc:  "v1: symlinked controller names (cpu -> cpu,cpuacct) do not break removal",
			dirs:  []string{"cpu,cpuacct/" + beV1},
			links: map[string]string{"cpu": "cpu,cpuacct", "cpuacct": "cpu,cpuacct"},
			gone:  []string{"cpu,cpuacct/" + beV1},
		},
		{
			desc: "v1: every QoS location is tried (QoS unknown once the pod is gone)",
			dirs: []string{"pids/" + guarV1, "memory/" + buV1, "blkio/" + beV1},
			gone: []string{"pids/" + guarV1, "memory/" + buV1, "blkio/" + beV1},
		},
		{
			desc:    "v1: a non-empty pod cgroup is left, with its child, and reported; the others go",
			dirs:    []string{"memory/" + beV1 + "/ctr", "pids/" + beV1},
			wantErr: true,
			gone:    []string{"pids/" + beV1},
			kept:    []string{"memory/" + beV1 + "/ctr"},
		},
		{
			desc: "v1: other pods' cgroups are untouched",
			dirs: []string{"pids/" + beV1, "pids/kubepods/besteffort/podu2", "pids/kubepods/podu10"},
			gone: []string{"pids/" + beV1},
			kept: []string{"pids/kubepods/besteffort/podu2", "pids/kubepods/podu10"},
		},
		{
			desc: "v1: no cgroup of the pod at all is no error",
			dirs: []string{"pids/kubepods/besteffort", "memory"},
			kept: []string{"pids/kubepods/besteffort", "memory"},
		},
		{
			desc: "v2: the pod level removed from the unified hierarchy, kubepods kept",
			v2:   true,
			dirs: []string{guarV1, buV1},
			gone: []string{guarV1, buV1},
			kept: []string{"kubepods", "kubepods/burstable"},
		},
		{
			desc:    "v2: a non-empty pod cgroup is left and reported",
			v2:      true,
			dirs:    []string{beV1 + "/sandbox"},
			wantErr: true,
			kept:    []string{beV1 + "/sandbox"},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			root := t.TempDir()
			if tc.v2 {
				if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range tc.dirs {
				mkdirs(t, filepath.Join(root, d))
			}
			for name, target := range tc.links {
				if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
					t.Fatal(err)
				}
			}
			err := New(root).Remove("u1")
			if (err != nil) != tc.wantErr {
				t.Errorf("Remove: error %v, want error %v", err, tc.wantErr)
			}
			for _, p := range tc.gone {
				if exists(filepath.Join(root, p)) {
					t.Errorf("%s still exists", p)
				}
			}
			for _, p := range tc.kept {
				if !exists(filepath.Join(root, p)) {
					t.Errorf("%s was removed", p)
				}
			}
		})
	}
}

// TestRemoveRetry: a pod cgroup left because it was not empty goes on a
// later try once its child is gone, as housekeeping retries it; a try after
// everything is gone is no error.
func TestRemoveRetry(t *testing.T) {
	root := t.TempDir()
	pod := filepath.Join(root, "memory", "kubepods", "besteffort", "podu1")
	mkdirs(t, filepath.Join(pod, "ctr"))
	c := New(root)
	if err := c.Remove("u1"); err == nil {
		t.Fatal("first Remove of a non-empty pod cgroup gave no error")
	}
	if err := os.Remove(filepath.Join(pod, "ctr")); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := c.Remove("u1"); err != nil {
			t.Fatalf("try %d after the child went: %v", i+1, err)
		}
	}
	if exists(pod) {
		t.Error("pod cgroup not removed on retry")
	}
}

func TestRemoveWithoutCgroupfs(t *testing.T) {
	if err := New(filepath.Join(t.TempDir(), "absent")).Remove("u1"); err == nil {
		t.Error("a missing cgroup root gave no error")
	}
}
