package kubeletnode

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// cgroupfsRoot is where cgroups are mounted: one hierarchy per controller
// (cgroup v1) or one unified hierarchy (cgroup v2).
const cgroupfsRoot = "/sys/fs/cgroup"

// procSys is where sysctls are read and written.
const procSys = "/proc/sys"

// kernelTunables are the sysctls the kubelet sets when it starts with
// protectKernelDefaults false (cm.setupKernelTunables): they are global to
// the machine, not to a namespace, so Stop puts back what was there.
var kernelTunables = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// readTunables returns the values of kernelTunables under root.
func readTunables(root string) (map[string]string, error) {
	out := make(map[string]string, len(kernelTunables))
	for _, name := range kernelTunables {
		raw, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return nil, err
		}
		out[name] = strings.TrimSpace(string(raw))
	}
	return out, nil
}

// restoreTunables writes back the saved values that have changed.
func restoreTunables(root string, saved map[string]string) error {
	var errs []error
	for name, want := range saved {
		raw, err := os.ReadFile(filepath.Join(root, name))
		if err == nil && strings.TrimSpace(string(raw)) == want {
			continue
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(want+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s=%s: %w", name, want, err))
		}
	}
	return errors.Join(errs...)
}

// legacyContainerLogsDir is where the kubelet links every container's log
// (kubelet.ContainerLogsDir, not configurable), whatever podLogsDir is.
const legacyContainerLogsDir = "/var/log/containers"

// cgroupHierarchies returns the directories a cgroup is created in: the
// root on cgroup v2, else each controller's hierarchy below it (symlinks
// such as cpu -> cpu,cpuacct name one already listed).
func cgroupHierarchies(root string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return []string{root}, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	return out, nil
}

// createCgroupRoot makes cgroup (a cgroupfs path such as /kubelet-a) in
// every hierarchy: with cgroupsPerQOS the kubelet checks that its
// cgroupRoot exists and creates kubepods below it. A new cpuset cgroup
// starts with no CPUs and no memory nodes, so it gets its parent's.
func createCgroupRoot(root, cgroup string) error {
	hs, err := cgroupHierarchies(root)
	if err != nil {
		return err
	}
	for _, h := range hs {
		dir := filepath.Join(h, cgroup)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if err := inheritCgroupFile(dir, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// inheritCgroupFile copies the parent's value of file into dir when dir has
// the file (its hierarchy has the controller) and it is empty.
func inheritCgroupFile(dir, file string) error {
	cur, err := os.ReadFile(filepath.Join(dir, file))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil || strings.TrimSpace(string(cur)) != "" {
		return err
	}
	parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), file))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, file), parent, 0o644)
}

// removeCgroupRoot removes cgroup and every cgroup below it (kubepods, the
// QoS classes, pods left over) in every hierarchy, deepest first. A cgroup
// that still holds a process cannot be removed: the error names it.
func removeCgroupRoot(root, cgroup string) error {
	hs, err := cgroupHierarchies(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hs {
		var dirs []string
		err := filepath.WalkDir(filepath.Join(h, cgroup), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // children before parents
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// unmountUnder unmounts every mount point at or below dir, deepest first:
// the kubelet mounts its pods' secret, projected and emptyDir (medium
// Memory) volumes under its root directory and leaves them when it stops.
// Lazy unmounts, so a mount a process still uses goes once it is released.
func unmountUnder(dir string) error {
	mounts, err := mountPoints()
	if err != nil {
		return err
	}
	var under []string
	for _, m := range mounts {
		if m == dir || strings.HasPrefix(m, dir+"/") {
			under = append(under, m)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(under)))
	var errs []error
	for _, m := range under {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// mountPoints lists this mount namespace's mount points.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		// ID parentID major:minor root mountpoint options ...
		fields := strings.Fields(s.Text())
		if len(fields) > 4 {
			out = append(out, unescapeMountPath(fields[4]))
		}
	}
	return out, s.Err()
}

// unescapeMountPath undoes the kernel's octal escapes of space, tab,
// newline and backslash in mountinfo.
func unescapeMountPath(p string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(p)
}

// removeLogLinks removes the links in dir (legacyContainerLogsDir) that
// point below target (the node's podLogsDir): the kubelet removes a link
// only with its container, and a stopped kubelet removes nothing.
func removeLogLinks(dir, target string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		link := filepath.Join(dir, e.Name())
		dest, err := os.Readlink(link)
		if err != nil || !strings.HasPrefix(dest, target+"/") {
			continue
		}
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
