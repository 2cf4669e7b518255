package kuberuntime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func memLimit(q string) v1.ResourceRequirements {
	return v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse(q)}}
}

// The kubelet's calculateEmptyDirMemorySize: the smallest of the node's
// allocatable, the pod's memory limit and the volume's sizeLimit.
func TestEmptyDirMemorySize(t *testing.T) {
	mi := int64(1 << 20)
	allocatable := v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}
	for _, tc := range []struct {
		desc        string
		containers  []v1.Container
		sizeLimit   string
		allocatable v1.ResourceList
		want        int64
	}{
		{desc: "node allocatable", containers: []v1.Container{{Name: "a"}}, allocatable: allocatable, want: 1024 * mi},
		{desc: "pod limit when every container has one", containers: []v1.Container{{Name: "a", Resources: memLimit("64Mi")}, {Name: "b", Resources: memLimit("32Mi")}}, allocatable: allocatable, want: 96 * mi},
		{desc: "no pod limit when one container lacks one", containers: []v1.Container{{Name: "a", Resources: memLimit("64Mi")}, {Name: "b"}}, allocatable: allocatable, want: 1024 * mi},
		{desc: "sizeLimit when smaller", containers: []v1.Container{{Name: "a", Resources: memLimit("64Mi")}}, sizeLimit: "16Mi", allocatable: allocatable, want: 16 * mi},
		{desc: "sizeLimit above the pod limit ignored", containers: []v1.Container{{Name: "a", Resources: memLimit("64Mi")}}, sizeLimit: "2Gi", allocatable: allocatable, want: 64 * mi},
		{desc: "nothing known: tmpfs's default", containers: []v1.Container{{Name: "a"}}, want: 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: tc.containers}}
			vol := &v1.Volume{Name: "m", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}}
			if tc.sizeLimit != "" {
				q := resource.MustParse(tc.sizeLimit)
				vol.EmptyDir.SizeLimit = &q
			}
			if got := emptyDirMemorySize(pod, vol, tc.allocatable); got != tc.want {
				t.Errorf("size %d, want %d", got, tc.want)
			}
		})
	}
}

// A memory emptyDir is the 0777 directory with a tmpfs on it, sized as
// above.
func TestGenerateContainerConfigMemoryEmptyDir(t *testing.T) {
	pod := makeTestPod()
	q := resource.MustParse("8Mi")
	pod.Spec.Volumes = []v1.Volume{{Name: "m", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &q}}}}
	gid := int64(123)
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &gid}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []v1.VolumeMount{{Name: "m", MountPath: "/m"}}
	fs := newFakeFS()
	cfg := generate(t, pod, c, 0, containerOpts(fs))
	dir := "/pods/uid-1/volumes/kubernetes.io~empty-dir/m"
	if cfg.Mounts[0].HostPath != dir || fs.exact[dir] != 0o777 {
		t.Errorf("mount %v, dir mode %v; want %s with 0777", cfg.Mounts[0], fs.exact[dir], dir)
	}
	if size, ok := fs.tmpfs[dir]; !ok || size != 8<<20 {
		t.Errorf("tmpfs %v, want %s with size 8Mi", fs.tmpfs, dir)
	}
	// New files get the fsGroup (the kubelet's emptyDir SetUpAt ends with
	// SetVolumeOwnership).
	if fs.owned[dir] != gid {
		t.Errorf("ownership %v, want %s given group %d", fs.owned, dir, gid)
	}
}

// On the real filesystem (root only: mount(2)): the tmpfs is mounted once
// however often the volume is set up, and unmountUnder lets the pod's
// directory be removed.
func TestMountTmpfsAndUnmount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; make test runs as root in CI")
	}
	root := t.TempDir()
	t.Cleanup(func() { _ = unmountUnder(root) }) // before TempDir's removal, even on failure
	dir := filepath.Join(root, "uid", "volumes", "kubernetes.io~empty-dir", "m")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := (OSFS{}).MountTmpfs(dir, 4<<20); err != nil {
			t.Fatal(err)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.TMPFS_MAGIC || int64(st.Blocks)*st.Bsize != 4<<20 {
		t.Errorf("statfs type %#x size %d, want a 4 MiB tmpfs", st.Type, int64(st.Blocks)*st.Bsize)
	}
	// Kept out of swap where the kernel allows it, as the kubelet's
	// emptyDir mounts.
	if opts := superOptions(t, dir); TmpfsNoswapSupported(root) != strings.Contains(","+opts+",", ",noswap,") {
		t.Errorf("tmpfs options %q: noswap supported %v", opts, TmpfsNoswapSupported(root))
	} else {
		t.Logf("tmpfs options %q (noswap supported: %v)", opts, TmpfsNoswapSupported(root))
	}
	if err := unmountUnder(filepath.Join(root, "uid")); err != nil {
		t.Fatal(err)
	}
	if mounted, err := isMountPoint(dir); err != nil || mounted {
		t.Errorf("still mounted (%v) after unmountUnder", err)
	}
	if err := os.RemoveAll(filepath.Join(root, "uid")); err != nil {
		t.Error(err)
	}
}

// superOptions returns the super options of the mount at dir in
// /proc/self/mountinfo.
func superOptions(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[4] != dir {
			continue
		}
		if _, after, ok := strings.Cut(line, " - "); ok {
			if g := strings.Fields(after); len(g) >= 3 {
				return g[2]
			}
		}
	}
	t.Fatalf("%s is not in /proc/self/mountinfo", dir)
	return ""
}

// A missing subPath is created with the volume root's mode (the kubelet's
// makeMounts: GetMode, then SafeMakeDir), so a subPath of a 0777 emptyDir
// is 0777 too, whatever sync's umask.
func TestSubPathTakesTheVolumesMode(t *testing.T) {
	root := t.TempDir()
	pod := makeTestPod()
	pod.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/sub", SubPath: "a/b"}}
	var err error
	withUmask(t, 0o077, func() {
		_, err = makeMounts(t.Context(), pod, c, nil, false, ContainerOptions{PodVolumesRoot: root, FS: OSFS{}})
	})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(root, string(pod.UID), "volumes", "kubernetes.io~empty-dir", "scratch", "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o777 {
		t.Errorf("subPath mode %v, want the volume's 0777", fi.Mode().Perm())
	}
}
