// Package cm keeps the cgroups of the pods sync runs, as the kubelet's
// container manager does on the cgroupfs driver. Sync names a pod's cgroup
// like the kubelet (kuberuntime.CgroupfsPodCgroupParent: /kubepods/pod<uid>,
// /kubepods/burstable/pod<uid>, /kubepods/besteffort/pod<uid>).
// PodContainerManager (pod_container.go) makes it with the pod's limits
// before the runtime starts the sandbox in it, and changes it in resizes;
// the runtime removes the sandbox's and containers' own cgroups with them,
// but nothing removes the pod level. The kubelet does
// (cleanupOrphanedPodCgroups with podContainerManagerImpl.Destroy);
// PodCgroups does it here. cpu.go has the kubelet's CPU conversions.
package cm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
)

// qosParents are the cgroup directories, relative to a hierarchy's root,
// that hold pod cgroups: Guaranteed pods sit directly under kubepods.
var qosParents = []string{"kubepods", "kubepods/burstable", "kubepods/besteffort"}

// PodCgroups removes pod cgroups under a cgroupfs root (usually
// /sys/fs/cgroup), on cgroup v2 (one unified hierarchy at the root) and v1
// (one hierarchy per controller directory below it).
type PodCgroups struct {
	root string
}

// New returns a PodCgroups for the cgroupfs mounted at root.
func New(root string) *PodCgroups { return &PodCgroups{root: root} }

// Unified reports whether the cgroupfs mounted at root is cgroup v2 (one
// unified hierarchy, with cgroup.controllers at its root).
func Unified(root string) bool {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	return err == nil
}

// V1 reports whether cgroup v1 hierarchies are mounted at root: a
// directory that is not a unified (v2) hierarchy.
func V1(root string) bool { return dirExists(root) && !Unified(root) }

// hierarchies returns the directories cgroups live under: the root itself on
// cgroup v2, else every controller directory below it. Symlinks (cpu ->
// cpu,cpuacct) name a hierarchy already listed and are skipped.
func (c *PodCgroups) hierarchies() ([]string, error) {
	if Unified(c.root) {
		return []string{c.root}, nil
	}
	entries, err := os.ReadDir(c.root)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
			dirs = append(dirs, filepath.Join(c.root, e.Name()))
		}
	}
	return dirs, nil
}

// Remove removes the pod's cgroup in every hierarchy and under every QoS
// parent, as the kubelet's podContainerManagerImpl.Destroy removes the pod
// cgroup in every subsystem. It only removes empty directories (rmdir, what
// cgroupfs allows): a cgroup that still holds a process or a child cgroup
// stays, and the error says so, for the caller to try again later. A pod
// with no cgroup is no error.
func (c *PodCgroups) Remove(uid types.UID) error {
	hs, err := c.hierarchies()
	if err != nil {
		return fmt.Errorf("pod %s cgroups: %w", uid, err)
	}
	var errs []error
	for _, h := range hs {
		for _, parent := range qosParents {
			dir := filepath.Join(h, parent, "pod"+string(uid))
			if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
