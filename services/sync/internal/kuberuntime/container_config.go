package kuberuntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/qos"
	"github.com/splitlet/splitlet/services/sync/internal/cm"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/volume"
)

// FS is the part of the node's filesystem that generateContainerConfig
// writes to: the container's log directory, emptyDir volume directories and
// the termination message file. Tests inject a fake.
type FS interface {
	// MkdirAll creates path and its parents; an existing directory is fine.
	MkdirAll(path string, perm os.FileMode) error
	// MkdirAllExact is MkdirAll, but path itself, when this call creates
	// it, gets exactly perm whatever the umask. An existing directory keeps
	// its mode.
	MkdirAllExact(path string, perm os.FileMode) error
	// CreateFile creates (or truncates) an empty file with exactly perm,
	// whatever the umask.
	CreateFile(path string, perm os.FileMode) error
	// SetVolumeOwnership gives a writable volume the pod's fsGroup
	// (volume.SetWritableVolumeOwnership).
	SetVolumeOwnership(dir string, fsGroup int64) error
	// MountTmpfs mounts a tmpfs of sizeBytes (zero: tmpfs's default) at
	// dir unless one is there already.
	MountTmpfs(dir string, sizeBytes int64) error
	// WriteFile writes data to path, created or truncated, with exactly
	// perm whatever the umask.
	WriteFile(path string, data []byte, perm os.FileMode) error
	// Remove deletes a file; a missing one is not an error.
	Remove(path string) error
}

// SetVolumeOwnership implements FS with volume.SetWritableVolumeOwnership.
func (OSFS) SetVolumeOwnership(dir string, fsGroup int64) error {
	return volume.SetWritableVolumeOwnership(dir, fsGroup)
}

// WriteFile implements FS: the kubelet's ensureHostsFile writes the hosts
// file with os.WriteFile and then chmods it. This does the same with
// open(2), write(2), fchmod(2) and close(2): os.OpenFile would also try to
// add the file to the network poller (for a regular file, four fcntl calls
// and a failing epoll_ctl) and os.Chmod walks the path again, on every
// container start.
func (OSFS) WriteFile(path string, data []byte, perm os.FileMode) error {
	fd, err := openRetry(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC|syscall.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	op := "write"
	for len(data) > 0 && err == nil {
		var n int
		n, err = syscall.Write(fd, data)
		switch {
		case err == syscall.EINTR:
			err = nil
		case err == nil && n == 0:
			err = io.ErrShortWrite
		case err == nil:
			data = data[n:]
		}
	}
	if err == nil {
		op, err = "chmod", syscall.Fchmod(fd, uint32(perm.Perm()))
	}
	if cerr := syscall.Close(fd); err == nil && cerr != nil {
		op, err = "close", cerr
	}
	if err != nil {
		return &os.PathError{Op: op, Path: path, Err: err}
	}
	return nil
}

// OSFS is FS on the real filesystem.
type OSFS struct{}

var _ FS = OSFS{}

// MkdirAll implements FS with mkdirAll.
func (OSFS) MkdirAll(path string, perm os.FileMode) error { return mkdirAll(path, perm) }

// mkdirAll is os.MkdirAll for paths that are usually new: it tries mkdir
// first and walks up only when the parent is missing, where os.MkdirAll
// stats the path and each missing parent before creating anything. A pod
// start creates five such directories (log directories, and the
// termination message's pods/<uid>/containers/<name>), and on some
// filesystems each lookup of a missing name costs as much as the mkdir:
// 13 syscalls become 7. An existing directory costs a mkdir and a stat.
func mkdirAll(path string, perm os.FileMode) error {
	err := os.Mkdir(path, perm)
	if errors.Is(err, os.ErrNotExist) {
		parent := filepath.Dir(path)
		if parent == path || parent == "." {
			return err
		}
		if err := mkdirAll(parent, perm); err != nil {
			return err
		}
		err = os.Mkdir(path, perm)
	}
	if err == nil {
		return nil
	}
	// Another caller may have made it meanwhile; a file there is an error.
	if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
		return nil
	}
	return err
}

// MkdirAllExact implements FS: mkdir(2) honours the umask, so a directory
// it makes is chmod'ed to perm afterwards, as the kubelet's emptyDir
// setupDir does rather than clearing the process's umask.
func (OSFS) MkdirAllExact(path string, perm os.FileMode) error {
	err := os.Mkdir(path, perm)
	if errors.Is(err, os.ErrNotExist) {
		if err := mkdirAll(filepath.Dir(path), perm); err != nil {
			return err
		}
		err = os.Mkdir(path, perm)
	}
	if err == nil {
		return os.Chmod(path, perm)
	}
	if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
		return nil
	}
	return err
}

// CreateFile implements FS: an empty file with exactly perm, an existing
// one truncated. The chmod in WriteFile is needed because create honours
// the umask, and the container's user (often not root) must be able to
// write the termination message.
func (fs OSFS) CreateFile(path string, perm os.FileMode) error {
	return fs.WriteFile(path, nil, perm)
}

// openRetry is syscall.Open, retried when a signal interrupts it.
func openRetry(path string, flag int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flag, perm)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// Remove implements FS.
func (OSFS) Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// ContainerOptions carries the node configuration and image facts
// generateContainerConfig needs. The zero value is the kubelet's defaults
// on the real filesystem, except MachineMemoryCapacity, which Burstable
// pods need.
type ContainerOptions struct {
	EnvOptions

	// PodLogsRoot holds the pods' log directories; empty means
	// DefaultPodLogsRoot.
	PodLogsRoot string
	// PodVolumesRoot holds emptyDir volumes under
	// <root>/<uid>/volumes/kubernetes.io~empty-dir/<name>; empty means
	// DefaultPodsDir.
	PodVolumesRoot string
	// PodContainersRoot holds termination message files under
	// <root>/<uid>/containers/<name>/ and the pod's hosts file,
	// <root>/<uid>/etc-hosts; empty means DefaultPodsDir.
	PodContainersRoot string
	// ClusterDomain is the cluster's DNS domain (--cluster-domain), which
	// a pod with a subdomain's hosts file names it in.
	ClusterDomain string
	// FS creates directories and files; nil means OSFS.
	FS FS
	// RandomID names a termination message file; nil means 8 random hex
	// digits, as the kubelet's makeUID.
	RandomID func() string

	// ImageUID and ImageUsername are the image's configured user, from
	// ImageStatus: the UID if numeric, else the name. The UID is passed to
	// the runtime when no runAsUser is set (the name is passed on as
	// run_as_username), and runAsNonRoot is checked against them; as in
	// the kubelet's getImageUser, neither set counts as root for that
	// check.
	ImageUID      *int64
	ImageUsername string

	// MachineMemoryCapacity is the node's memory in bytes; a Burstable
	// container's oom_score_adj is scaled by it.
	MachineMemoryCapacity int64
	// SwapController is the node's cgroup swap control
	// (DetectSwapController); containers are kept off swap through it.
	// The zero value, NoSwapController, leaves swap to the runtime.
	SwapController SwapController
	// SwapBehavior is the kubelet's memorySwap.swapBehavior; empty is
	// NoSwap.
	SwapBehavior SwapBehavior
	// MachineSwapCapacity is the node's swap in bytes, which LimitedSwap
	// containers share in proportion to their memory requests.
	MachineSwapCapacity int64
	// CFS is the kubelet's cpuCFSQuota and cpuCFSQuotaPeriod.
	CFS CPUCFS
	// SeccompProfileRoot resolves Localhost seccomp profiles; empty means
	// DefaultSeccompProfileRoot.
	SeccompProfileRoot string
	// SeccompDefault is the kubelet's --seccomp-default: RuntimeDefault
	// instead of Unconfined when the pod asks for nothing.
	SeccompDefault bool
	// TargetContainerID is the runtime ID of an ephemeral container's
	// targetContainerName, whose PID namespace it joins.
	TargetContainerID string
	// ImageVolumes are the images of the container's image volumes, by
	// volume name, as SyncPod pulled them (toContainerImageVolumes).
	ImageVolumes map[string]*runtimeapi.ImageSpec
	// SupportsRecursiveReadOnly is whether the pod's runtime handler
	// supports recursive read-only mounts (SupportsRecursiveReadOnlyMounts),
	// for the mounts asking for them; SyncPod sets it per container.
	SupportsRecursiveReadOnly bool
}

func (o *ContainerOptions) fs() FS {
	if o.FS == nil {
		return OSFS{}
	}
	return o.FS
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// makeUID returns 8 random hex digits, as the kubelet's makeUID; it only
// has to keep two instances of one container apart.
func makeUID() string { return fmt.Sprintf("%08x", rand.Uint32()) }

// BuildContainerLogsDirectory returns the container's log directory inside
// its pod's. Matches the kubelet's BuildContainerLogsDirectory.
func BuildContainerLogsDirectory(root, namespace, podName, podUID, containerName string) string {
	return filepath.Join(BuildPodLogsDirectory(root, namespace, podName, podUID), containerName)
}

// buildContainerLogsPath returns the log path relative to the sandbox's log
// directory, <container>/<restartCount>.log. Matches the kubelet's
// buildContainerLogsPath.
func buildContainerLogsPath(containerName string, restartCount int) string {
	return filepath.Join(containerName, fmt.Sprintf("%d.log", restartCount))
}

// generateContainerConfig builds the CreateContainer config for one
// container of the pod (regular, init, or an ephemeral container passed as
// its *v1.Container). It matches the kubelet's generateContainerConfig with
// GenerateRunContainerOptions, makeEnvironmentVariables, makeMounts and
// applyPlatformSpecificContainerConfig.
//
// The signature differs from the kubelet's on purpose: the pod IP is
// podIPs[0] (the kubelet passes both but uses podIPs[0] when it has one);
// the container type is read from the pod spec, as the kubelet's
// newContainerAnnotations does; and no cleanup func is returned: the
// kubelet's releases what its subPath preparation (PrepareSafeSubpath)
// holds, which sync does not make, and image volumes need none. On error, the termination message file created here is
// removed again.
//
// It creates the container's log directory, emptyDir volume directories and
// subPath directories, and the termination message file, through opts.FS.
func generateContainerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, restartCount int, podIPs []string, imageRef string, opts ContainerOptions) (_ *runtimeapi.ContainerConfig, retErr error) {
	if err := verifyRunAsNonRoot(pod, c, opts.ImageUID, opts.ImageUsername); err != nil {
		return nil, err
	}
	envs, err := makeEnvironmentVariables(ctx, pod, c, podIPs, podVolumeDirs(pod, opts), opts.EnvOptions)
	if err != nil {
		return nil, err
	}
	command, args := ExpandContainerCommandAndArgs(c, envs)

	fs := opts.fs()
	logsRoot := orDefault(opts.PodLogsRoot, DefaultPodLogsRoot)
	logDir := BuildContainerLogsDirectory(logsRoot, pod.Namespace, pod.Name, string(pod.UID), c.Name)
	if err := fs.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("create container log directory for container %s: %w", c.Name, err)
	}

	linux, err := generateLinuxContainerConfig(pod, c, opts)
	if err != nil {
		return nil, err
	}

	mounts, err := makeMounts(ctx, pod, c, envs, linux.GetSecurityContext().GetPrivileged(), opts)
	if err != nil {
		return nil, err
	}
	hosts, err := makeHostsMount(ctx, pod, c, podIPs, opts, etcHostsPath)
	if err != nil {
		return nil, err
	}
	if hosts != nil {
		mounts = append(mounts, hosts)
	}
	if m := makeTerminationMessageMount(ctx, pod, c, opts); m != nil {
		defer func() {
			if retErr != nil {
				_ = fs.Remove(m.HostPath)
			}
		}()
		mounts = append(mounts, m)
	}

	config := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{
			Name:    c.Name,
			Attempt: uint32(restartCount),
		},
		Image:       &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		Command:     command,
		Args:        args,
		WorkingDir:  c.WorkingDir,
		Labels:      newContainerLabels(c, pod),
		Annotations: newContainerAnnotations(ctx, c, pod, restartCount),
		Mounts:      mounts,
		LogPath:     buildContainerLogsPath(c.Name, restartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux:       linux,
	}
	for _, e := range envs {
		config.Envs = append(config.Envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	return config, nil
}

// makeMounts turns the container's volume mounts into CRI mounts. Supported
// are emptyDir (a directory under PodVolumesRoot, created here), hostPath
// (the path as is; its type is not checked), configMap, secret,
// downwardAPI and projected volumes (written here by setUpAtomicVolume and
// mounted read-only, as the kubelet's plugins report ReadOnly), and image
// volumes (read-only, the runtime mounts the image SyncPod pulled,
// opts.ImageVolumes; a subPath is the mount's ImageSubPath); any other
// volume type, an emptyDir in memory or hugepages, and volumeDevices fail
// with errdefs.ErrNotImplemented naming the field. subPath and subPathExpr
// are joined to the volume path and, when missing, created like the
// kubelet's makeMounts does; propagation follows translateMountPropagation.
//
// The managed /etc/hosts is added by generateContainerConfig
// (makeHostsMount), as the kubelet's makeMounts adds it.
func makeMounts(ctx context.Context, pod *v1.Pod, c *v1.Container, envs []EnvVar, privileged bool, opts ContainerOptions) ([]*runtimeapi.Mount, error) {
	field := containerFieldPath(pod, c.Name)
	if len(c.VolumeDevices) > 0 {
		return nil, fmt.Errorf("%w: %s.volumeDevices: block volumes are not supported by splitlet", errdefs.ErrNotImplemented, field)
	}
	fs := opts.fs()
	var mounts []*runtimeapi.Mount
	for i, vm := range c.VolumeMounts {
		mountField := fmt.Sprintf("%s.volumeMounts[%d]", field, i)
		var (
			volPath  string
			readOnly bool
			image    *runtimeapi.ImageSpec
			err      error
		)
		if vol, volField := podImageVolume(pod, vm.Name); vol != nil {
			// The runtime mounts the image: no host path, and read-only
			// as the kubelet's image volume plugin reports.
			image, err = imageVolumeSpec(vol, volField, opts)
			readOnly = true
		} else {
			volPath, readOnly, err = volumeHostPath(ctx, pod, vm.Name, opts)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", mountField, err)
		}
		subPath := vm.SubPath
		if vm.SubPathExpr != "" {
			if subPath, err = expandSubPathExpr(vm.SubPathExpr, envs); err != nil {
				return nil, fmt.Errorf("%s.subPathExpr: %w", mountField, err)
			}
		}
		hostPath := volPath
		if subPath != "" {
			if filepath.IsAbs(subPath) || slices.Contains(strings.Split(filepath.ToSlash(subPath), "/"), "..") {
				return nil, fmt.Errorf("%w: %s: subPath %q must be a relative path without '..'", errdefs.ErrInvalidArgument, mountField, subPath)
			}
		}
		imageSubPath := ""
		if image != nil {
			// A path inside the image, for the runtime to resolve.
			imageSubPath = subPath
		} else if subPath != "" {
			hostPath = filepath.Join(volPath, subPath)
			// Created now so that it is a directory owned like the
			// volume, not whatever the runtime would make of a missing
			// path. A written volume's keys exist already (a symlink
			// through ..data: the mount keeps the file it resolves to
			// now, so a subPath does not see updates, as in the kubelet).
			exists := false
			if readOnly {
				_, err := os.Lstat(hostPath)
				exists = err == nil
			}
			if !exists {
				// With the volume root's mode, as the kubelet's makeMounts
				// (GetMode, SafeMakeDir); under an fsGroup's setgid root
				// it inherits the group too.
				perm := os.FileMode(0o750)
				if fi, err := os.Stat(volPath); err == nil {
					perm = fi.Mode() & (os.ModePerm | os.ModeSetgid | os.ModeSticky)
				}
				if err := fs.MkdirAllExact(hostPath, perm); err != nil {
					return nil, fmt.Errorf("%s: create subPath %s: %w", mountField, hostPath, err)
				}
			}
		}
		propagation, err := translateMountPropagation(vm.MountPropagation)
		if err != nil {
			return nil, fmt.Errorf("%s.mountPropagation: %w", mountField, err)
		}
		if propagation == runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL && !privileged {
			return nil, fmt.Errorf("%w: %s.mountPropagation: Bidirectional mount propagation is available only to privileged containers",
				errdefs.ErrInvalidArgument, mountField)
		}
		rro, err := container.ResolveRecursiveReadOnly(vm, opts.SupportsRecursiveReadOnly)
		if err != nil {
			return nil, fmt.Errorf("%w: %s.recursiveReadOnly: %w", errdefs.ErrInvalidArgument, mountField, err)
		}
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath:     vm.MountPath,
			HostPath:          hostPath,
			Readonly:          vm.ReadOnly || readOnly,
			RecursiveReadOnly: rro,
			Propagation:       propagation,
			Image:             image,
			ImageSubPath:      imageSubPath,
		})
	}
	return mounts, nil
}

// volumeHostPath returns the node path backing the named pod volume,
// creating an emptyDir's directory and writing a configMap, secret,
// downwardAPI or projected volume's files (readOnly: such volumes are
// mounted read-only).
func volumeHostPath(ctx context.Context, pod *v1.Pod, name string, opts ContainerOptions) (_ string, readOnly bool, _ error) {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Name != name {
			continue
		}
		volField := fmt.Sprintf("spec.volumes[%d]", i)
		switch {
		case vol.HostPath != nil:
			return vol.HostPath.Path, false, nil
		case isAtomicWriterVolume(&vol.VolumeSource):
			// SyncPod's setUpVolumes refreshed it when it could;
			// written here when it never was.
			if dir := atomicVolumeDir(pod, vol, opts); isSetUp(dir) {
				return dir, true, nil
			}
			dir, err := setUpAtomicVolume(ctx, pod, vol, volField, opts)
			return dir, true, err
		case vol.EmptyDir != nil:
			medium := vol.EmptyDir.Medium
			if medium != v1.StorageMediumDefault && medium != v1.StorageMediumMemory {
				return "", false, fmt.Errorf("%w: %s.emptyDir.medium: %q is not supported by splitlet (the node's disk or Memory)",
					errdefs.ErrNotImplemented, volField, medium)
			}
			dir := emptyDirHostPath(pod, vol.Name, opts)
			// Exactly 0777, whatever sync's umask, like the kubelet's
			// emptyDir setupDir: any container user must be able to write
			// to it. Only a new directory is chmod'ed, so a mode a
			// container chose survives the next container's start.
			if err := opts.fs().MkdirAllExact(dir, 0o777); err != nil {
				return "", false, fmt.Errorf("create emptyDir %s: %w", dir, err)
			}
			if medium == v1.StorageMediumMemory {
				if err := opts.fs().MountTmpfs(dir, emptyDirMemorySize(pod, vol, opts.allocatable())); err != nil {
					return "", false, fmt.Errorf("%s.emptyDir: %w", volField, err)
				}
			}
			// The kubelet's emptyDir SetUpAt ends with SetVolumeOwnership.
			if g := fsGroup(pod); g != nil {
				if err := opts.fs().SetVolumeOwnership(dir, *g); err != nil {
					return "", false, fmt.Errorf("%s.emptyDir: fsGroup: %w", volField, err)
				}
			}
			return dir, false, nil
		}
		return "", false, fmt.Errorf("%w: %s.%s: volume type not supported by splitlet (only emptyDir, hostPath, configMap, secret, downwardAPI, projected and image)",
			errdefs.ErrNotImplemented, volField, volumeSourceName(&vol.VolumeSource))
	}
	return "", false, fmt.Errorf("%w: cannot find volume %q to mount into container", errdefs.ErrInvalidArgument, name)
}

// emptyDirHostPath returns the node directory of the pod's emptyDir volume
// name, as the kubelet's emptyDir plugin GetPath does under its pods dir.
func emptyDirHostPath(pod *v1.Pod, name string, opts ContainerOptions) string {
	return filepath.Join(orDefault(opts.PodVolumesRoot, DefaultPodsDir), string(pod.UID),
		"volumes", "kubernetes.io~empty-dir", name)
}

// volumeSourceName returns the JSON name of the volume's source
// ("configMap", "persistentVolumeClaim", ...), for error messages.
func volumeSourceName(src *v1.VolumeSource) string {
	raw, err := json.Marshal(src)
	if err != nil {
		return "volumeSource"
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || len(fields) == 0 {
		return "volumeSource"
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// translateMountPropagation matches the kubelet's function of that name:
// unset and None are PRIVATE.
func translateMountPropagation(mode *v1.MountPropagationMode) (runtimeapi.MountPropagation, error) {
	switch {
	case mode == nil, *mode == v1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case *mode == v1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case *mode == v1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("%w: invalid MountPropagation mode: %q", errdefs.ErrInvalidArgument, *mode)
}

// makeTerminationMessageMount creates the file the container writes its
// termination message to, at
// <PodContainersRoot>/<uid>/containers/<name>/<random>, and mounts it at
// terminationMessagePath. The random part keeps successive instances of the
// container apart. As in the kubelet's makeMounts, a failure to create the
// file is logged and the mount left out: the container can run without it.
func makeTerminationMessageMount(ctx context.Context, pod *v1.Pod, c *v1.Container, opts ContainerOptions) *runtimeapi.Mount {
	if c.TerminationMessagePath == "" {
		return nil
	}
	log := loggerFrom(ctx).WithLazy(zap.String("pod", pod.Namespace+"/"+pod.Name), zap.String("container", c.Name))
	fs := opts.fs()
	dir := filepath.Join(orDefault(opts.PodContainersRoot, DefaultPodsDir), string(pod.UID), "containers", c.Name)
	if err := fs.MkdirAll(dir, 0o750); err != nil {
		log.Error("cannot create container directory for the termination message", zap.Error(err))
		return nil
	}
	newID := opts.RandomID
	if newID == nil {
		newID = makeUID
	}
	file := filepath.Join(dir, newID())
	if err := fs.CreateFile(file, 0o666); err != nil {
		log.Error("cannot create termination message file", zap.String("path", file), zap.Error(err))
		return nil
	}
	return &runtimeapi.Mount{HostPath: file, ContainerPath: c.TerminationMessagePath}
}

// generateLinuxContainerConfig matches the kubelet's function of that name:
// resources and the effective security context; an ephemeral container
// with a target joins the target's PID namespace unless it already shares
// the pod's or the node's.
func generateLinuxContainerConfig(pod *v1.Pod, c *v1.Container, opts ContainerOptions) (*runtimeapi.LinuxContainerConfig, error) {
	sc, err := determineEffectiveSecurityContext(pod, c, opts)
	if err != nil {
		return nil, err
	}
	res, err := generateLinuxContainerResources(pod, c, opts)
	if err != nil {
		return nil, err
	}
	if opts.TargetContainerID != "" && sc.NamespaceOptions.Pid == runtimeapi.NamespaceMode_CONTAINER {
		sc.NamespaceOptions.Pid = runtimeapi.NamespaceMode_TARGET
		sc.NamespaceOptions.TargetId = opts.TargetContainerID
	}
	return &runtimeapi.LinuxContainerConfig{Resources: res, SecurityContext: sc}, nil
}

// generateLinuxContainerResources matches the kubelet's function of that
// name on cgroup v1 (this project's hosts): cpu shares from the request
// (from the limit when only that is set), CFS quota from the limit, memory
// limit, oom_score_adj by QoS, and swap (configureSwap). Pod-level
// limits stand in for unset container limits. Not done: hugepage limits
// and cgroup v2 memory QoS / memory.oom.group.
func generateLinuxContainerResources(pod *v1.Pod, c *v1.Container, opts ContainerOptions) (*runtimeapi.LinuxContainerResources, error) {
	var cpuRequest *resource.Quantity
	if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
		cpuRequest = &q
	}
	cpuLimit, memLimit := c.Resources.Limits.Cpu(), c.Resources.Limits.Memory()
	if pod.Spec.Resources != nil {
		if cpuLimit.IsZero() {
			cpuLimit = pod.Spec.Resources.Limits.Cpu()
		}
		if memLimit.IsZero() {
			memLimit = pod.Spec.Resources.Limits.Memory()
		}
	}
	res := calculateLinuxResources(cpuRequest, cpuLimit, memLimit, opts.CFS.period())
	adj, err := containerOOMScoreAdjust(pod, c, opts.MachineMemoryCapacity)
	if err != nil {
		return nil, err
	}
	res.OomScoreAdj = int64(adj)
	configureSwap(res, pod, c, opts)
	return res, nil
}

// CPUCFS is how CPU limits become CFS quotas: the kubelet's cpuCFSQuota
// (--cpu-cfs-quota) and cpuCFSQuotaPeriod (--cpu-cfs-quota-period, the
// CPUCFSQuotaPeriod gate, GA). The zero value is the kubelet's default:
// quotas with a 100 ms period.
type CPUCFS struct {
	// DisableQuota is --cpu-cfs-quota=false: no quota and no period.
	DisableQuota bool
	// QuotaPeriod is cpu.cfs_period_us; zero is 100 ms.
	QuotaPeriod time.Duration
}

// period is the CFS period in microseconds, 0 with quotas off.
func (c CPUCFS) period() int64 {
	switch {
	case c.DisableQuota:
		return 0
	case c.QuotaPeriod == 0:
		return cm.QuotaPeriod
	}
	return int64(c.QuotaPeriod / time.Microsecond)
}

// calculateLinuxResources matches the kubelet's function of that name;
// cfsPeriod is CPUCFS.period (0: no quota).
func calculateLinuxResources(cpuRequest, cpuLimit, memoryLimit *resource.Quantity, cfsPeriod int64) *runtimeapi.LinuxContainerResources {
	res := &runtimeapi.LinuxContainerResources{}
	// A limit without a request means request = limit; the API server
	// defaults that, and the kubelet repeats it for older objects.
	if cpuRequest == nil && cpuLimit != nil {
		res.CpuShares = cm.MilliCPUToShares(cpuLimit.MilliValue())
	} else {
		res.CpuShares = cm.MilliCPUToShares(cpuRequest.MilliValue())
	}
	if memoryLimit != nil {
		res.MemoryLimitInBytes = memoryLimit.Value()
	}
	if cfsPeriod > 0 {
		res.CpuPeriod = cfsPeriod
		if cpuLimit != nil {
			res.CpuQuota = cm.MilliCPUToQuota(cpuLimit.MilliValue(), cfsPeriod)
		}
	}
	return res
}

// The kubelet's qos/policy.go values.
const (
	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000
)

// containerOOMScoreAdjust matches the kubelet's qos.GetContainerOOMScoreAdjust
// (with KubeletOOMScoreAdjTieBreak off, its default): node-critical and
// Guaranteed pods get -997, BestEffort 1000, and a Burstable container
// 1000 - 1000*request/capacity, kept within [3, 999] so that it always
// ranks between the two; a sidecar gets no more than the smallest regular
// container's score, so it outlives the containers it serves.
func containerOOMScoreAdjust(pod *v1.Pod, c *v1.Container, memoryCapacity int64) (int, error) {
	if defaults.IsNodeCriticalPod(pod) {
		return guaranteedOOMScoreAdj, nil
	}
	switch qos.GetPodQOS(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj, nil
	case v1.PodQOSBestEffort:
		return besteffortOOMScoreAdj, nil
	}
	if memoryCapacity <= 0 {
		return 0, fmt.Errorf("%w: machine memory capacity unknown, cannot compute oom_score_adj of a Burstable container",
			errdefs.ErrFailedPrecondition)
	}
	adj := 1000 - 1000*c.Resources.Requests.Memory().Value()/memoryCapacity
	if isSidecar(pod, c) && len(pod.Spec.Containers) > 0 {
		minReq := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
		for i := range pod.Spec.Containers[1:] {
			minReq = min(minReq, pod.Spec.Containers[i+1].Resources.Requests.Memory().Value())
		}
		adj = min(adj, 1000-1000*minReq/memoryCapacity)
	}
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj, nil
	}
	if adj == besteffortOOMScoreAdj {
		return int(adj - 1), nil
	}
	return int(adj), nil
}

// isSidecar reports whether c is one of the pod's restartable init
// containers. Matches the kubelet's qos.isSidecarContainer.
func isSidecar(pod *v1.Pod, c *v1.Container) bool {
	if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}

// Paths hidden or made read-only in /proc and /sys unless procMount is
// Unmasked. They must match the kubelet's securitycontext defaults, which
// follow moby's.
var (
	defaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap",
	}
	defaultReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// effectiveSecurityContext merges the pod's security context into the
// container's, the container's fields winning. Only the fields that have a
// pod-level counterpart come from the pod (SELinux options, run-as user,
// group and non-root, seccomp, AppArmor). Matches the kubelet's
// securitycontext.DetermineEffectiveSecurityContext.
func effectiveSecurityContext(pod *v1.Pod, c *v1.Container) *v1.SecurityContext {
	eff := &v1.SecurityContext{}
	if psc := pod.Spec.SecurityContext; psc != nil {
		eff.SELinuxOptions = psc.SELinuxOptions
		eff.RunAsUser = psc.RunAsUser
		eff.RunAsGroup = psc.RunAsGroup
		eff.RunAsNonRoot = psc.RunAsNonRoot
		eff.SeccompProfile = psc.SeccompProfile
		eff.AppArmorProfile = psc.AppArmorProfile
	}
	csc := c.SecurityContext
	if csc == nil {
		return eff
	}
	if csc.SELinuxOptions != nil {
		eff.SELinuxOptions = csc.SELinuxOptions
	}
	if csc.RunAsUser != nil {
		eff.RunAsUser = csc.RunAsUser
	}
	if csc.RunAsGroup != nil {
		eff.RunAsGroup = csc.RunAsGroup
	}
	if csc.RunAsNonRoot != nil {
		eff.RunAsNonRoot = csc.RunAsNonRoot
	}
	if csc.SeccompProfile != nil {
		eff.SeccompProfile = csc.SeccompProfile
	}
	if csc.AppArmorProfile != nil {
		eff.AppArmorProfile = csc.AppArmorProfile
	}
	eff.Capabilities = csc.Capabilities
	eff.Privileged = csc.Privileged
	eff.ReadOnlyRootFilesystem = csc.ReadOnlyRootFilesystem
	eff.AllowPrivilegeEscalation = csc.AllowPrivilegeEscalation
	eff.ProcMount = csc.ProcMount
	return eff
}

// determineEffectiveSecurityContext builds the container's CRI security
// context. Matches the kubelet's function of that name with
// convertToRuntimeSecurityContext, getSeccompProfile and
// securitycontext.AddNoNewPrivileges: the image's user runs the container
// when no runAsUser is set; supplemental groups and namespaces come from the
// pod; no_new_privs is set only when allowPrivilegeEscalation is explicitly
// false; /proc paths are masked unless procMount is Unmasked. AppArmor is
// left to the runtime's default (hosts here run without AppArmor).
func determineEffectiveSecurityContext(pod *v1.Pod, c *v1.Container, opts ContainerOptions) (*runtimeapi.LinuxContainerSecurityContext, error) {
	eff := effectiveSecurityContext(pod, c)
	sc := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: namespacesForPod(pod),
		NoNewPrivs:       eff.AllowPrivilegeEscalation != nil && !*eff.AllowPrivilegeEscalation,
		MaskedPaths:      defaultMaskedPaths,
		ReadonlyPaths:    defaultReadonlyPaths,
	}
	if eff.ProcMount != nil && *eff.ProcMount == v1.UnmaskedProcMount {
		sc.MaskedPaths, sc.ReadonlyPaths = []string{}, []string{}
	}
	if eff.Privileged != nil {
		sc.Privileged = *eff.Privileged
	}
	if eff.ReadOnlyRootFilesystem != nil {
		sc.ReadonlyRootfs = *eff.ReadOnlyRootFilesystem
	}
	if caps := eff.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{
			AddCapabilities:  make([]string, 0, len(caps.Add)),
			DropCapabilities: make([]string, 0, len(caps.Drop)),
		}
		for _, a := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(a))
		}
		for _, d := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(d))
		}
	}
	if o := eff.SELinuxOptions; o != nil {
		sc.SelinuxOptions = &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
	}
	if eff.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *eff.RunAsGroup}
	}
	switch {
	case eff.RunAsUser != nil:
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *eff.RunAsUser}
	case opts.ImageUID != nil:
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *opts.ImageUID}
	default:
		sc.RunAsUsername = opts.ImageUsername
	}

	seccomp, err := seccompProfile(pod, c, opts)
	if err != nil {
		return nil, err
	}
	sc.Seccomp = seccomp

	if psc := pod.Spec.SecurityContext; psc != nil {
		groups, policy, err := supplementalGroups(psc)
		if err != nil {
			return nil, err
		}
		sc.SupplementalGroups = groups
		sc.SupplementalGroupsPolicy = policy
	}
	return sc, nil
}

// seccompProfile matches the kubelet's getSeccompProfile and
// fieldSeccompProfile: the container's profile, else the pod's, else
// RuntimeDefault under SeccompDefault and Unconfined otherwise; a Localhost
// profile is a file under SeccompProfileRoot.
func seccompProfile(pod *v1.Pod, c *v1.Container, opts ContainerOptions) (*runtimeapi.SecurityProfile, error) {
	var p *v1.SeccompProfile
	if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
		p = c.SecurityContext.SeccompProfile
	} else if pod.Spec.SecurityContext != nil {
		p = pod.Spec.SecurityContext.SeccompProfile
	}
	if p == nil {
		if opts.SeccompDefault {
			return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case v1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, fmt.Errorf("%w: localhostProfile must be set if seccompProfile type is Localhost", errdefs.ErrInvalidArgument)
		}
		root := orDefault(opts.SeccompProfileRoot, DefaultSeccompProfileRoot)
		return &runtimeapi.SecurityProfile{
			ProfileType:  runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(root, *p.LocalhostProfile),
		}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// verifyRunAsNonRoot refuses to start a container that must not run as
// root when it would: runAsUser 0, or no runAsUser and an image user of 0
// (no image user at all means root), or a non-numeric image user, which
// cannot be checked. Matches the kubelet's verifyRunAsNonRoot.
func verifyRunAsNonRoot(pod *v1.Pod, c *v1.Container, imageUID *int64, imageUsername string) error {
	eff := effectiveSecurityContext(pod, c)
	if eff.RunAsNonRoot == nil || !*eff.RunAsNonRoot {
		return nil
	}
	if eff.RunAsUser != nil {
		if *eff.RunAsUser == 0 {
			return fmt.Errorf("%w: container %s: runAsUser breaks non-root policy", errdefs.ErrFailedPrecondition, c.Name)
		}
		return nil
	}
	switch {
	case imageUID != nil && *imageUID == 0, imageUID == nil && imageUsername == "":
		return fmt.Errorf("%w: container %s has runAsNonRoot and image will run as root", errdefs.ErrFailedPrecondition, c.Name)
	case imageUID == nil:
		return fmt.Errorf("%w: container %s has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root",
			errdefs.ErrFailedPrecondition, c.Name, imageUsername)
	}
	return nil
}
