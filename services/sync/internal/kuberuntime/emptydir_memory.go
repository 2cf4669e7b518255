package kuberuntime

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// emptyDirMemorySize is the size of a memory-backed emptyDir's tmpfs: the
// node's allocatable memory, or the pod's memory limit when every
// container has one and it is smaller, or the volume's sizeLimit when that
// is smaller still; zero when none is known (tmpfs's default). Matches the
// kubelet's calculateEmptyDirMemorySize (SizeMemoryBackedVolumes, GA).
func emptyDirMemorySize(pod *v1.Pod, vol *v1.Volume, allocatable v1.ResourceList) int64 {
	var size int64
	if m, ok := allocatable[v1.ResourceMemory]; ok {
		size = m.Value()
	}
	if limit := podMemoryLimit(pod); limit > 0 && (size == 0 || limit <= size) {
		size = limit
	}
	if sl := vol.EmptyDir.SizeLimit; sl != nil && sl.Value() > 0 && (size == 0 || sl.Value() <= size) {
		size = sl.Value()
	}
	return size
}

// podMemoryLimit is the pod's memory limit as its cgroup gets it (the
// kubelet's ResourceConfigForPod): the regular and sidecar containers'
// limits summed, or an init container's when larger; zero when a
// container has none.
func podMemoryLimit(pod *v1.Pod) int64 {
	limit := func(c *v1.Container) (int64, bool) {
		q, ok := c.Resources.Limits[v1.ResourceMemory]
		return q.Value(), ok && !q.IsZero()
	}
	var sum, initMax int64
	for i := range pod.Spec.Containers {
		l, ok := limit(&pod.Spec.Containers[i])
		if !ok {
			return 0
		}
		sum += l
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		l, ok := limit(c)
		if !ok {
			return 0
		}
		if isSidecar(pod, c) {
			sum += l
		} else {
			initMax = max(initMax, l)
		}
	}
	return max(sum, initMax)
}

// MountTmpfs implements FS: dir gets a tmpfs of sizeBytes (zero: tmpfs's
// default), never swapped out where the kernel allows it (noswap), unless
// one is mounted there already, so that setting up the volume again for
// the next container changes nothing. Matches the kubelet's emptyDir
// setupTmpfs and generateTmpfsMountOptions.
func (OSFS) MountTmpfs(dir string, sizeBytes int64) error {
	mounted, err := isMountPoint(dir)
	if err != nil {
		return err
	}
	if mounted {
		return nil
	}
	var opts []string
	if sizeBytes > 0 {
		opts = append(opts, "size="+strconv.FormatInt(sizeBytes, 10))
	}
	if TmpfsNoswapSupported(filepath.Dir(dir)) {
		opts = append(opts, tmpfsNoswap)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, strings.Join(opts, ",")); err != nil {
		return fmt.Errorf("mount tmpfs at %s: %w", dir, err)
	}
	return nil
}

// tmpfsNoswap keeps a tmpfs's pages out of swap (Linux 6.4), so that a
// secret or memory emptyDir never reaches the disk.
const tmpfsNoswap = "noswap"

var (
	noswapOnce      sync.Once
	noswapSupported bool
)

// TmpfsNoswapSupported reports, once per process, whether tmpfs takes the
// noswap option, as the kubelet's swap.IsTmpfsNoswapOptionSupported: not in
// a user namespace (the kernel refuses it to unprivileged mounts), yes from
// Linux 6.4, else as a trial mount in a directory made under dir says.
func TmpfsNoswapSupported(dir string) bool {
	noswapOnce.Do(func() {
		if inUserNamespace() {
			return
		}
		if kernelAtLeast(6, 4) {
			noswapSupported = true
			return
		}
		try, err := os.MkdirTemp(dir, "tmpfs-noswap-test-")
		if err != nil {
			return
		}
		defer func() { _ = os.RemoveAll(try) }()
		if unix.Mount("tmpfs", try, "tmpfs", 0, tmpfsNoswap) == nil {
			noswapSupported = true
			_ = unix.Unmount(try, 0)
		}
	})
	return noswapSupported
}

// inUserNamespace reports whether sync runs in a user namespace other than
// the initial one, whose uid_map maps all of 0..2^32-2 onto itself.
func inUserNamespace() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return !(len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295")
}

// kernelAtLeast reports whether the running kernel's release is at least
// major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var maj, mnr int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &maj, &mnr); err != nil {
		return false
	}
	return maj > major || (maj == major && mnr >= minor)
}

// isMountPoint reports whether dir is on another device than its parent.
func isMountPoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return false, err
	}
	if err := unix.Stat(filepath.Dir(dir), &parent); err != nil {
		return false, err
	}
	return st.Dev != parent.Dev, nil
}

// unmountUnder unmounts every mount at or below dir, deepest first (a
// memory-backed emptyDir's tmpfs), so that the pod's directory can be
// removed. The kubelet's emptyDir TearDownAt unmounts each volume.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	prefix := filepath.Clean(dir) + "/"
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		// Field 5 is the mount point, with spaces as \040.
		p := strings.ReplaceAll(fields[4], `\040`, " ")
		if p+"/" == prefix || strings.HasPrefix(p, prefix) {
			points = append(points, p)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}
