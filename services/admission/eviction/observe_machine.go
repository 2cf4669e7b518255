package eviction

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/splitlet/splitlet/internal/logctx"
)

// MachineConfig says where MachineSource looks.
type MachineConfig struct {
	// ProcRoot is the proc filesystem; empty means "/proc". Tests point it
	// at a directory of fake files.
	ProcRoot string
	// NodeFsRoot is a directory on the node filesystem (the node agent's
	// root directory); empty means "/".
	NodeFsRoot string
	// ImageFsRoot is a directory on the runtime's image filesystem (for
	// containerd, its root such as /var/lib/containerd); empty means
	// NodeFsRoot.
	ImageFsRoot string
}

// MachineSource observes the machine it runs on: memory from /proc/meminfo,
// nodefs and imagefs from statfs of their roots, pids from the kernel's
// limits and the number of tasks. Per-pod usage comes from a
// PodStatsProvider.
//
// memory.available is MemAvailable here; the kubelet computes it as
// MemTotal minus the root cgroup's working set, which the cgroup layout of a
// container or a shared machine does not always give splitlet.
type MachineSource struct {
	cfg  MachineConfig
	pods PodStatsProvider
	now  func() time.Time
}

var _ SummaryProvider = (*MachineSource)(nil)

// NewMachineSource returns a source reading the machine; pods may be nil,
// in which case no pod has stats and ranking falls back to priority.
func NewMachineSource(cfg MachineConfig, pods PodStatsProvider) *MachineSource {
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	if cfg.NodeFsRoot == "" {
		cfg.NodeFsRoot = "/"
	}
	if cfg.ImageFsRoot == "" {
		cfg.ImageFsRoot = cfg.NodeFsRoot
	}
	return &MachineSource{cfg: cfg, pods: pods, now: time.Now}
}

// HasDedicatedImageFs reports whether the imagefs root is on another device
// than the nodefs root (the kubelet's DiskInfoProvider.HasDedicatedImageFs).
func (s *MachineSource) HasDedicatedImageFs() (bool, error) {
	var node, image unix.Stat_t
	if err := unix.Stat(s.cfg.NodeFsRoot, &node); err != nil {
		return false, fmt.Errorf("stat nodefs root %s: %w", s.cfg.NodeFsRoot, err)
	}
	if err := unix.Stat(s.cfg.ImageFsRoot, &image); err != nil {
		return false, fmt.Errorf("stat imagefs root %s: %w", s.cfg.ImageFsRoot, err)
	}
	return node.Dev != image.Dev, nil
}

// Observe implements SummaryProvider. A signal that cannot be read is
// logged and left out; only a failure to list pod stats fails the whole
// observation.
func (s *MachineSource) Observe(ctx context.Context) (Observations, error) {
	log := logctx.From(ctx)
	obs := Observations{Signals: map[Signal]SignalObservation{}}
	now := s.now()

	if o, err := s.memory(now); err != nil {
		log.Warn("eviction manager: cannot observe memory", zap.Error(err))
	} else {
		obs.Signals[SignalMemoryAvailable] = o
	}
	for _, fs := range []struct {
		root          string
		bytes, inodes Signal
	}{
		{s.cfg.NodeFsRoot, SignalNodeFsAvailable, SignalNodeFsInodesFree},
		{s.cfg.ImageFsRoot, SignalImageFsAvailable, SignalImageFsInodesFree},
	} {
		bytesObs, inodesObs, err := statfsObservations(fs.root, now)
		if err != nil {
			log.Warn("eviction manager: cannot observe filesystem", zap.String("root", fs.root), zap.Error(err))
			continue
		}
		obs.Signals[fs.bytes] = bytesObs
		obs.Signals[fs.inodes] = inodesObs
	}
	if o, err := s.pids(now); err != nil {
		log.Warn("eviction manager: cannot observe pids", zap.Error(err))
	} else {
		obs.Signals[SignalPIDAvailable] = o
	}

	if s.pods != nil {
		pods, err := s.pods.ListPodStats(ctx)
		if err != nil {
			return Observations{}, fmt.Errorf("listing pod stats: %w", err)
		}
		obs.Pods = pods
	}
	return obs, nil
}

// memory reads MemTotal and MemAvailable.
func (s *MachineSource) memory(now time.Time) (SignalObservation, error) {
	path := filepath.Join(s.cfg.ProcRoot, "meminfo")
	data, err := os.ReadFile(path)
	if err != nil {
		return SignalObservation{}, err
	}
	fields := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// "MemAvailable:    1234567 kB"
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			v *= 1024
		}
		fields[name] = v
	}
	total, okT := fields["MemTotal"]
	avail, okA := fields["MemAvailable"]
	if !okT || !okA {
		return SignalObservation{}, fmt.Errorf("%s: MemTotal or MemAvailable missing", path)
	}
	return SignalObservation{
		Available: *resource.NewQuantity(avail, resource.BinarySI),
		Capacity:  *resource.NewQuantity(total, resource.BinarySI),
		Time:      now,
	}, nil
}

// statfsObservations measures free bytes (for unprivileged users, as df
// shows them) and free inodes of the filesystem holding root.
func statfsObservations(root string, now time.Time) (bytesObs, inodesObs SignalObservation, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		return bytesObs, inodesObs, fmt.Errorf("statfs %s: %w", root, err)
	}
	bsize := int64(st.Bsize)
	bytesObs = SignalObservation{
		Available: *resource.NewQuantity(int64(st.Bavail)*bsize, resource.BinarySI),
		Capacity:  *resource.NewQuantity(int64(st.Blocks)*bsize, resource.BinarySI),
		Time:      now,
	}
	inodesObs = SignalObservation{
		Available: *resource.NewQuantity(int64(st.Ffree), resource.DecimalSI),
		Capacity:  *resource.NewQuantity(int64(st.Files), resource.DecimalSI),
		Time:      now,
	}
	return bytesObs, inodesObs, nil
}

// pids measures free process IDs as the kubelet's pidlimit.Stats: the limit
// is the smaller of kernel.pid_max and kernel.threads-max, the use the
// number of tasks in /proc/loadavg (sysinfo's count is truncated above
// 65535, kubernetes#107107).
func (s *MachineSource) pids(now time.Time) (SignalObservation, error) {
	var limit int64 = -1
	var errs []error
	for _, name := range []string{"pid_max", "threads-max"} {
		v, err := readInt(filepath.Join(s.cfg.ProcRoot, "sys", "kernel", name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if limit < 0 || v < limit {
			limit = v
		}
	}
	if limit < 0 {
		return SignalObservation{}, errors.Join(errs...)
	}
	tasks, err := runningTasks(filepath.Join(s.cfg.ProcRoot, "loadavg"))
	if err != nil {
		return SignalObservation{}, err
	}
	return SignalObservation{
		Available: *resource.NewQuantity(limit-tasks, resource.DecimalSI),
		Capacity:  *resource.NewQuantity(limit, resource.DecimalSI),
		Time:      now,
	}, nil
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// runningTasks reads the total of the fourth field of /proc/loadavg
// ("0.00 0.01 0.05 2/345 6789": 345).
func runningTasks(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data))
	if len(f) < 4 {
		return 0, fmt.Errorf("%s: want at least 4 fields, got %q", path, data)
	}
	_, total, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, fmt.Errorf("%s: malformed task count %q", path, f[3])
	}
	v, err := strconv.ParseInt(total, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
