package eviction

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
)

// fakeProc writes the proc files MachineSource reads; an empty content
// leaves a file out.
func fakeProc(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		if content == "" {
			continue
		}
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakePodStats is a hand-written PodStatsProvider.
type fakePodStats struct {
	pods []PodStats
	err  error
}

var _ PodStatsProvider = (*fakePodStats)(nil)

func (f *fakePodStats) ListPodStats(context.Context) ([]PodStats, error) { return f.pods, f.err }

const meminfo = "MemTotal:        8000000 kB\nMemFree:          100000 kB\nMemAvailable:     2000000 kB\nBuffers:  1 kB\n"

func TestMachineSourceObserve(t *testing.T) {
	tests := []struct {
		desc        string
		files       map[string]string
		wantSignals map[Signal][2]int64 // available, capacity
		wantAbsent  []Signal
	}{
		{
			desc: "all files present",
			files: map[string]string{
				"meminfo": meminfo, "sys/kernel/pid_max": "32768\n", "sys/kernel/threads-max": "60000\n",
				"loadavg": "0.10 0.20 0.30 3/468 12345\n",
			},
			wantSignals: map[Signal][2]int64{
				SignalMemoryAvailable: {2000000 * 1024, 8000000 * 1024},
				SignalPIDAvailable:    {32768 - 468, 32768},
			},
		},
		{
			desc: "threads-max lower than pid_max limits pids",
			files: map[string]string{
				"meminfo": meminfo, "sys/kernel/pid_max": "4194304\n", "sys/kernel/threads-max": "1000\n",
				"loadavg": "0.10 0.20 0.30 3/400 12345\n",
			},
			wantSignals: map[Signal][2]int64{SignalPIDAvailable: {600, 1000}},
		},
		{
			desc:       "missing meminfo and loadavg leave their signals out",
			files:      map[string]string{"sys/kernel/pid_max": "32768\n"},
			wantAbsent: []Signal{SignalMemoryAvailable, SignalPIDAvailable},
		},
		{
			desc:       "meminfo without MemAvailable",
			files:      map[string]string{"meminfo": "MemTotal: 8000000 kB\n"},
			wantAbsent: []Signal{SignalMemoryAvailable},
		},
		{
			desc:       "malformed loadavg",
			files:      map[string]string{"sys/kernel/pid_max": "32768\n", "loadavg": "0.1 0.2 0.3 468\n"},
			wantAbsent: []Signal{SignalPIDAvailable},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			dir := t.TempDir()
			src := NewMachineSource(MachineConfig{ProcRoot: fakeProc(t, tc.files), NodeFsRoot: dir}, nil)
			obs, err := src.Observe(context.Background())
			if err != nil {
				t.Fatalf("Observe: %v", err)
			}
			for sig, want := range tc.wantSignals {
				got, ok := obs.Signals[sig]
				if !ok {
					t.Errorf("%s missing", sig)
					continue
				}
				if got.Available.Value() != want[0] || got.Capacity.Value() != want[1] {
					t.Errorf("%s = %s of %s, want %d of %d", sig, &got.Available, &got.Capacity, want[0], want[1])
				}
				if got.Time.IsZero() {
					t.Errorf("%s has no observation time", sig)
				}
			}
			for _, sig := range tc.wantAbsent {
				if o, ok := obs.Signals[sig]; ok {
					t.Errorf("%s = %s, want it absent", sig, &o.Available)
				}
			}
			// The filesystems are real: the temp dir's.
			for _, sig := range []Signal{SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalImageFsAvailable, SignalImageFsInodesFree} {
				o, ok := obs.Signals[sig]
				if !ok {
					t.Errorf("%s missing", sig)
					continue
				}
				if o.Capacity.Sign() <= 0 || o.Available.Cmp(o.Capacity) > 0 || o.Available.Sign() < 0 {
					// Some filesystems (overlay on tmpfs) report 0 inodes.
					if !(o.Capacity.IsZero() && o.Available.IsZero()) {
						t.Errorf("%s = %s of %s, want 0 <= available <= capacity", sig, &o.Available, &o.Capacity)
					}
				}
			}
		})
	}
}

func TestMachineSourceFilesystems(t *testing.T) {
	dir := t.TempDir()
	src := NewMachineSource(MachineConfig{ProcRoot: t.TempDir(), NodeFsRoot: dir, ImageFsRoot: filepath.Join(dir, "missing")}, nil)
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if _, ok := obs.Signals[SignalNodeFsAvailable]; !ok {
		t.Errorf("nodefs.available missing")
	}
	if _, ok := obs.Signals[SignalImageFsAvailable]; ok {
		t.Errorf("imagefs.available present for a root that does not exist")
	}
	same := NewMachineSource(MachineConfig{NodeFsRoot: dir, ImageFsRoot: dir}, nil)
	if dedicated, err := same.HasDedicatedImageFs(); err != nil || dedicated {
		t.Errorf("HasDedicatedImageFs() = %v, %v for one directory, want false", dedicated, err)
	}
	if _, err := src.HasDedicatedImageFs(); err == nil {
		t.Errorf("HasDedicatedImageFs() succeeded for a missing imagefs root")
	}
}

func TestMachineSourcePodStats(t *testing.T) {
	procRoot := fakeProc(t, map[string]string{"meminfo": meminfo})
	want := []PodStats{{UID: "a", MemoryWorkingSetBytes: 42}}
	src := NewMachineSource(MachineConfig{ProcRoot: procRoot, NodeFsRoot: t.TempDir()}, &fakePodStats{pods: want})
	obs, err := src.Observe(context.Background())
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	if len(obs.Pods) != 1 || obs.Pods[0].UID != "a" || obs.Pods[0].MemoryWorkingSetBytes != 42 {
		t.Errorf("Pods = %+v, want %+v", obs.Pods, want)
	}

	failing := NewMachineSource(MachineConfig{ProcRoot: procRoot, NodeFsRoot: t.TempDir()}, &fakePodStats{err: errdefs.ErrUnavailable})
	if _, err := failing.Observe(context.Background()); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("Observe error = %v, want one wrapping ErrUnavailable", err)
	}
}

// TestMachineSourceRealProc reads this machine's /proc, where it exists.
func TestMachineSourceRealProc(t *testing.T) {
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		t.Skip("no /proc/meminfo on this machine: not Linux or proc not mounted")
	}
	obs, err := NewMachineSource(MachineConfig{}, nil).Observe(context.Background())
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	for _, sig := range []Signal{SignalMemoryAvailable, SignalNodeFsAvailable, SignalPIDAvailable} {
		o, ok := obs.Signals[sig]
		if !ok {
			t.Errorf("%s missing on a Linux machine", sig)
			continue
		}
		if o.Capacity.Sign() <= 0 || o.Available.Cmp(o.Capacity) > 0 {
			t.Errorf("%s = %s of %s, want available within a positive capacity", sig, &o.Available, &o.Capacity)
		}
	}
}
