package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/defaults"
)

// fakeFS records what generateContainerConfig creates and can fail on
// chosen paths.
type fakeFS struct {
	dirs    map[string]os.FileMode
	exact   map[string]os.FileMode // made with MkdirAllExact
	files   map[string]os.FileMode
	removed []string
	failOn  string
	data    map[string][]byte // WriteFile's contents
	tmpfs   map[string]int64  // MountTmpfs's directories and sizes
	owned   map[string]int64  // SetVolumeOwnership's directories and groups
}

var _ FS = (*fakeFS)(nil)

func newFakeFS() *fakeFS {
	return &fakeFS{dirs: map[string]os.FileMode{}, exact: map[string]os.FileMode{}, files: map[string]os.FileMode{}}
}

func (f *fakeFS) MkdirAll(path string, perm os.FileMode) error {
	if f.failOn != "" && strings.HasPrefix(path, f.failOn) {
		return os.ErrPermission
	}
	f.dirs[path] = perm
	return nil
}

// MkdirAllExact records the directory in dirs and, for the exact mode,
// in exact.
func (f *fakeFS) MkdirAllExact(path string, perm os.FileMode) error {
	if err := f.MkdirAll(path, perm); err != nil {
		return err
	}
	f.exact[path] = perm
	return nil
}

func (f *fakeFS) CreateFile(path string, perm os.FileMode) error {
	if f.failOn != "" && strings.HasPrefix(path, f.failOn) {
		return os.ErrPermission
	}
	f.files[path] = perm
	return nil
}

func (f *fakeFS) SetVolumeOwnership(dir string, fsGroup int64) error {
	if f.owned == nil {
		f.owned = map[string]int64{}
	}
	f.owned[dir] = fsGroup
	return nil
}

func (f *fakeFS) MountTmpfs(dir string, sizeBytes int64) error {
	if f.tmpfs == nil {
		f.tmpfs = map[string]int64{}
	}
	f.tmpfs[dir] = sizeBytes
	return nil
}

func (f *fakeFS) WriteFile(path string, data []byte, perm os.FileMode) error {
	if err := f.CreateFile(path, perm); err != nil {
		return err
	}
	if f.data == nil {
		f.data = map[string][]byte{}
	}
	f.data[path] = data
	return nil
}

func (f *fakeFS) Remove(path string) error {
	f.removed = append(f.removed, path)
	delete(f.files, path)
	return nil
}

const gi = int64(1) << 30

func containerOpts(fs *fakeFS) ContainerOptions {
	return ContainerOptions{
		EnvOptions:            EnvOptions{HostIPs: []string{"192.168.1.10"}},
		PodLogsRoot:           "/logs",
		PodVolumesRoot:        "/pods",
		PodContainersRoot:     "/pods",
		FS:                    fs,
		RandomID:              func() string { return "0000beef" },
		MachineMemoryCapacity: 10 * gi,
	}
}

func generate(t *testing.T, pod *v1.Pod, c *v1.Container, restartCount int, opts ContainerOptions) *runtimeapi.ContainerConfig {
	t.Helper()
	cfg, err := generateContainerConfig(context.Background(), pod, c, restartCount, []string{testPodIP}, "sha256:abc", opts)
	if err != nil {
		t.Fatalf("generateContainerConfig: %v", err)
	}
	return cfg
}

func TestGenerateContainerConfigBasics(t *testing.T) {
	pod := makeTestPod()
	pod.Spec.TerminationGracePeriodSeconds = new(int64(45))
	c := &pod.Spec.Containers[1]
	c.Command = []string{"/bin/sh", "-c"}
	c.Args = []string{"echo $(POD) on $(NODE_IP) $$(POD)"}
	c.WorkingDir = "/work"
	c.Stdin, c.StdinOnce, c.TTY = true, true, true
	c.TerminationMessagePath = "/dev/termination-log"
	c.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	c.Env = []v1.EnvVar{fieldEnv("POD", "metadata.name"), fieldEnv("NODE_IP", "status.hostIP")}
	fs := newFakeFS()

	cfg := generate(t, pod, c, 4, containerOpts(fs))

	if cfg.GetMetadata().GetName() != "foo2" || cfg.GetMetadata().GetAttempt() != 4 {
		t.Errorf("metadata = %v, want foo2 attempt 4", cfg.GetMetadata())
	}
	if cfg.GetImage().GetImage() != "sha256:abc" || cfg.GetImage().GetUserSpecifiedImage() != testImage {
		t.Errorf("image = %v, want ref sha256:abc, user specified %s", cfg.GetImage(), testImage)
	}
	if want := []string{"echo web on 192.168.1.10 $(POD)"}; !reflect.DeepEqual(cfg.Args, want) {
		t.Errorf("args = %q, want %q", cfg.Args, want)
	}
	if !reflect.DeepEqual(cfg.Command, c.Command) || cfg.WorkingDir != "/work" || !cfg.Stdin || !cfg.StdinOnce || !cfg.Tty {
		t.Errorf("command %q, workdir %q, stdin %t/%t, tty %t", cfg.Command, cfg.WorkingDir, cfg.Stdin, cfg.StdinOnce, cfg.Tty)
	}
	var envs []string
	for _, kv := range cfg.Envs {
		envs = append(envs, kv.Key+"="+string(kv.Value))
	}
	if want := []string{"POD=web", "NODE_IP=192.168.1.10"}; !reflect.DeepEqual(envs, want) {
		t.Errorf("envs = %q, want %q", envs, want)
	}
	if cfg.LogPath != "foo2/4.log" {
		t.Errorf("log path = %q, want foo2/4.log", cfg.LogPath)
	}
	if _, ok := fs.dirs["/logs/default_web_uid-1/foo2"]; !ok {
		t.Errorf("container log directory not created; dirs %v", fs.dirs)
	}
	wantLabels := map[string]string{
		KubernetesPodNameLabel: "web", KubernetesPodNamespaceLabel: "default",
		KubernetesPodUIDLabel: "uid-1", KubernetesContainerNameLabel: "foo2",
	}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", cfg.Labels, wantLabels)
	}
	a := cfg.Annotations
	if want := strconv.FormatUint(hashOf("foo2"), 16); a[ContainerHashLabel] != want {
		t.Errorf("hash annotation %q, want bare hex %q as the kubelet writes it", a[ContainerHashLabel], want)
	}
	if a[ContainerRestartCountLabel] != "4" || a[PodTerminationGracePeriodLabel] != "45" || a[ContainerTypeLabel] != ContainerTypeRegular ||
		a[ContainerTerminationMessagePolicyLabel] != "FallbackToLogsOnError" {
		t.Errorf("annotations = %v", a)
	}

	// The termination message file: created world-writable, mounted last.
	file := "/pods/uid-1/containers/foo2/0000beef"
	if perm, ok := fs.files[file]; !ok || perm != 0o666 {
		t.Errorf("termination file %s: created %t perm %o, want 0666", file, ok, perm)
	}
	last := cfg.Mounts[len(cfg.Mounts)-1]
	if last.HostPath != file || last.ContainerPath != "/dev/termination-log" {
		t.Errorf("last mount = %v, want %s at /dev/termination-log", last, file)
	}
}

func TestGenerateContainerConfigLogPathPerRestart(t *testing.T) {
	for _, rc := range []int{0, 1, 17} {
		pod := makeTestPod()
		cfg := generate(t, pod, &pod.Spec.Containers[0], rc, containerOpts(newFakeFS()))
		if want := fmt.Sprintf("foo1/%d.log", rc); cfg.LogPath != want {
			t.Errorf("restart %d: log path %q, want %q", rc, cfg.LogPath, want)
		}
		if cfg.GetMetadata().GetAttempt() != uint32(rc) {
			t.Errorf("restart %d: attempt %d", rc, cfg.GetMetadata().GetAttempt())
		}
	}
}

func TestContainerLabelsRoundTrip(t *testing.T) {
	pod := makeTestPod()
	pod.DeletionGracePeriodSeconds = new(int64(10))
	pod.Spec.TerminationGracePeriodSeconds = new(int64(60))
	pod.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "busybox:1.36"}}
	c := &pod.Spec.Containers[0]
	c.TerminationMessagePath = "/tmp/msg"
	c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/bin/stop", "now"}}}}
	c.Ports = []v1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: v1.ProtocolTCP}}

	cases := []struct {
		desc      string
		container *v1.Container
		restarts  int
		wantType  string
	}{
		{desc: "regular container with hooks and ports", container: c, restarts: 3, wantType: ContainerTypeRegular},
		{desc: "init container", container: &pod.Spec.InitContainers[0], restarts: 0, wantType: ContainerTypeInit},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			cfg := generate(t, pod, tc.container, tc.restarts, containerOpts(newFakeFS()))
			l := getContainerInfoFromLabels(cfg.Labels)
			if l.PodName != "web" || l.PodNamespace != "default" || l.PodUID != "uid-1" || l.ContainerName != tc.container.Name {
				t.Errorf("labels read back as %+v", l)
			}
			a := getContainerInfoFromAnnotations(context.Background(), cfg.Annotations)
			if a.Hash != hashOf(tc.container.Name) {
				t.Errorf("hash = %x, want %x", a.Hash, hashOf(tc.container.Name))
			}
			if a.RestartCount != tc.restarts || a.ContainerType != tc.wantType {
				t.Errorf("restart count %d type %q, want %d %q", a.RestartCount, a.ContainerType, tc.restarts, tc.wantType)
			}
			if a.PodDeletionGracePeriod == nil || *a.PodDeletionGracePeriod != 10 ||
				a.PodTerminationGracePeriod == nil || *a.PodTerminationGracePeriod != 60 {
				t.Errorf("grace periods = %v / %v, want 10 / 60", a.PodDeletionGracePeriod, a.PodTerminationGracePeriod)
			}
			if a.TerminationMessagePath != tc.container.TerminationMessagePath || a.TerminationMessagePolicy != tc.container.TerminationMessagePolicy {
				t.Errorf("termination message %q/%q", a.TerminationMessagePath, a.TerminationMessagePolicy)
			}
			var wantPreStop *v1.LifecycleHandler
			if tc.container.Lifecycle != nil {
				wantPreStop = tc.container.Lifecycle.PreStop
			}
			if !reflect.DeepEqual(a.PreStopHandler, wantPreStop) {
				t.Errorf("preStop = %+v, want %+v", a.PreStopHandler, wantPreStop)
			}
			if !reflect.DeepEqual(a.ContainerPorts, tc.container.Ports) {
				t.Errorf("ports = %+v, want %+v", a.ContainerPorts, tc.container.Ports)
			}
		})
	}
}

func TestGenerateContainerConfigMounts(t *testing.T) {
	pod := makeTestPod()
	pod.Spec.Volumes = []v1.Volume{
		{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/data"}}},
	}
	c := &pod.Spec.Containers[0]
	c.TerminationMessagePath = "/dev/termination-log"
	c.Env = []v1.EnvVar{fieldEnv("POD", "metadata.name")}
	hostToContainer := v1.MountPropagationHostToContainer
	c.VolumeMounts = []v1.VolumeMount{
		{Name: "scratch", MountPath: "/scratch"},
		{Name: "host", MountPath: "/data", ReadOnly: true, MountPropagation: &hostToContainer},
		{Name: "scratch", MountPath: "/per-pod", SubPathExpr: "logs/$(POD)"},
		{Name: "host", MountPath: "/sub", SubPath: "a/b"},
	}
	fs := newFakeFS()
	cfg := generate(t, pod, c, 0, containerOpts(fs))

	emptyDir := "/pods/uid-1/volumes/kubernetes.io~empty-dir/scratch"
	want := []*runtimeapi.Mount{
		{ContainerPath: "/scratch", HostPath: emptyDir, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
		{ContainerPath: "/data", HostPath: "/var/data", Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		{ContainerPath: "/per-pod", HostPath: emptyDir + "/logs/web", Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
		{ContainerPath: "/sub", HostPath: "/var/data/a/b", Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
	}
	if len(cfg.Mounts) != len(want)+2 { // plus /etc/hosts and the termination message
		t.Fatalf("mounts = %v, want %d volume mounts, /etc/hosts and the termination message", cfg.Mounts, len(want))
	}
	if h := cfg.Mounts[len(want)]; h.ContainerPath != "/etc/hosts" || h.HostPath != "/pods/uid-1/etc-hosts" || h.Readonly {
		t.Errorf("hosts mount = %v, want the pod's etc-hosts at /etc/hosts, writable", h)
	}
	for i, w := range want {
		g := cfg.Mounts[i]
		if g.ContainerPath != w.ContainerPath || g.HostPath != w.HostPath || g.Readonly != w.Readonly || g.Propagation != w.Propagation {
			t.Errorf("mount %d = %v, want %v", i, g, w)
		}
	}
	if perm, ok := fs.exact[emptyDir]; !ok || perm != 0o777 {
		t.Errorf("emptyDir %s created %t with exactly %o, want exactly 0777", emptyDir, ok, perm)
	}
	for _, d := range []string{emptyDir + "/logs/web", "/var/data/a/b"} {
		if _, ok := fs.dirs[d]; !ok {
			t.Errorf("subPath %s not created", d)
		}
	}
	if _, ok := fs.dirs["/var/data"]; ok {
		t.Error("hostPath volume itself was created; it must be used as is")
	}
}

func TestGenerateContainerConfigRejects(t *testing.T) {
	bidirectional := v1.MountPropagationBidirectional
	cases := []struct {
		desc      string
		mutate    func(*v1.Pod, *v1.Container)
		wantIs    error
		wantField string
	}{
		{
			desc: "configMap volume",
			mutate: func(p *v1.Pod, c *v1.Container) {
				p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}}
				c.VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}}
			},
			wantIs: errdefs.ErrNotImplemented, wantField: "spec.volumes[0].configMap",
		},
		{
			desc: "persistentVolumeClaim volume",
			mutate: func(p *v1.Pod, c *v1.Container) {
				p.Spec.Volumes = []v1.Volume{
					{Name: "ok", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
					{Name: "pvc", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
				}
				c.VolumeMounts = []v1.VolumeMount{{Name: "ok", MountPath: "/a"}, {Name: "pvc", MountPath: "/b"}}
			},
			wantIs: errdefs.ErrNotImplemented, wantField: "spec.containers[0].volumeMounts[1]: not implemented: spec.volumes[1].persistentVolumeClaim",
		},
		{
			desc: "hugepages emptyDir",
			mutate: func(p *v1.Pod, c *v1.Container) {
				p.Spec.Volumes = []v1.Volume{{Name: "m", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumHugePages}}}}
				c.VolumeMounts = []v1.VolumeMount{{Name: "m", MountPath: "/m"}}
			},
			wantIs: errdefs.ErrNotImplemented, wantField: "spec.volumes[0].emptyDir.medium",
		},
		{
			desc:   "mount of an unknown volume",
			mutate: func(_ *v1.Pod, c *v1.Container) { c.VolumeMounts = []v1.VolumeMount{{Name: "ghost", MountPath: "/g"}} },
			wantIs: errdefs.ErrInvalidArgument, wantField: "spec.containers[0].volumeMounts[0]",
		},
		{
			desc: "subPath escaping the volume",
			mutate: func(p *v1.Pod, c *v1.Container) {
				p.Spec.Volumes = []v1.Volume{{Name: "e", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
				c.VolumeMounts = []v1.VolumeMount{{Name: "e", MountPath: "/e", SubPath: "../../etc"}}
			},
			wantIs: errdefs.ErrInvalidArgument, wantField: "spec.containers[0].volumeMounts[0]",
		},
		{
			desc: "bidirectional propagation unprivileged",
			mutate: func(p *v1.Pod, c *v1.Container) {
				p.Spec.Volumes = []v1.Volume{{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/mnt"}}}}
				c.VolumeMounts = []v1.VolumeMount{{Name: "h", MountPath: "/mnt", MountPropagation: &bidirectional}}
			},
			wantIs: errdefs.ErrInvalidArgument, wantField: "spec.containers[0].volumeMounts[0].mountPropagation",
		},
		{
			desc: "block device",
			mutate: func(_ *v1.Pod, c *v1.Container) {
				c.VolumeDevices = []v1.VolumeDevice{{Name: "blk", DevicePath: "/dev/xvda"}}
			},
			wantIs: errdefs.ErrNotImplemented, wantField: "spec.containers[0].volumeDevices",
		},
		{
			desc: "secret env",
			mutate: func(_ *v1.Pod, c *v1.Container) {
				c.Env = []v1.EnvVar{{Name: "S", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{Key: "k"}}}}
			},
			wantIs: errdefs.ErrNotImplemented, wantField: "spec.containers[0].env[0].valueFrom.secretKeyRef",
		},
		{
			desc: "runAsNonRoot with root image",
			mutate: func(p *v1.Pod, _ *v1.Container) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: new(true)}
			},
			wantIs: errdefs.ErrFailedPrecondition, wantField: "image will run as root",
		},
		{
			desc: "runAsNonRoot with runAsUser 0",
			mutate: func(p *v1.Pod, c *v1.Container) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: new(true)}
				c.SecurityContext = &v1.SecurityContext{RunAsUser: new(int64(0))}
			},
			wantIs: errdefs.ErrFailedPrecondition, wantField: "runAsUser breaks non-root policy",
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			c := &pod.Spec.Containers[0]
			c.TerminationMessagePath = "/dev/termination-log"
			tc.mutate(pod, c)
			fs := newFakeFS()
			_, err := generateContainerConfig(context.Background(), pod, c, 0, nil, "img", containerOpts(fs))
			if !errors.Is(err, tc.wantIs) {
				t.Fatalf("err = %v, want %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantField) {
				t.Errorf("error %q does not contain %q", err, tc.wantField)
			}
			if len(fs.files) != 0 {
				t.Errorf("files left behind after the error: %v", fs.files)
			}
		})
	}
}

func TestRunAsNonRootAllowed(t *testing.T) {
	cases := []struct {
		desc     string
		uid      *int64
		username string
		runAs    *int64
		wantErr  bool
	}{
		{desc: "non-root image uid", uid: new(int64(1000))},
		{desc: "explicit non-root runAsUser over root image", uid: new(int64(0)), runAs: new(int64(1000))},
		{desc: "named image user cannot be verified", username: "nobody", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: new(true), RunAsUser: tc.runAs}
			opts := containerOpts(newFakeFS())
			opts.ImageUID, opts.ImageUsername = tc.uid, tc.username
			cfg, err := generateContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 0, nil, "img", opts)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %t", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			want := tc.runAs
			if want == nil {
				want = tc.uid
			}
			if got := cfg.GetLinux().GetSecurityContext().GetRunAsUser(); got.GetValue() != *want {
				t.Errorf("run as user = %v, want %d", got, *want)
			}
		})
	}
}

func TestTerminationMessageFileFailureIsNotFatal(t *testing.T) {
	pod := makeTestPod()
	c := &pod.Spec.Containers[0]
	c.TerminationMessagePath = "/dev/termination-log"
	fs := newFakeFS()
	fs.failOn = "/pods/uid-1/containers"
	cfg := generate(t, pod, c, 0, containerOpts(fs))
	for _, m := range cfg.Mounts {
		if m.ContainerPath == "/dev/termination-log" {
			t.Errorf("termination message mounted although its file could not be created: %v", m)
		}
	}
}

func burstablePod(memRequests ...string) *v1.Pod {
	pod := makeTestPod()
	pod.Spec.Containers = nil
	for i, r := range memRequests {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{
			Name: fmt.Sprintf("c%d", i), Image: testImage,
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse(r)}},
		})
	}
	return pod
}

func TestOOMScoreAdjPerQOS(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	cases := []struct {
		desc      string
		pod       func() *v1.Pod
		container func(*v1.Pod) *v1.Container
		want      int64
	}{
		{
			desc:      "best effort",
			pod:       makeTestPod,
			container: func(p *v1.Pod) *v1.Container { return &p.Spec.Containers[0] },
			want:      1000,
		},
		{
			desc: "guaranteed",
			pod: func() *v1.Pod {
				p := makeTestPod()
				for i := range p.Spec.Containers {
					p.Spec.Containers[i].Resources = guaranteedResources("1", "1Gi")
				}
				return p
			},
			container: func(p *v1.Pod) *v1.Container { return &p.Spec.Containers[0] },
			want:      -997,
		},
		{
			desc:      "burstable scaled by request: 1Gi of 10Gi",
			pod:       func() *v1.Pod { return burstablePod("1Gi") },
			container: func(p *v1.Pod) *v1.Container { return &p.Spec.Containers[0] },
			want:      900,
		},
		{
			desc:      "burstable tiny request stays below best effort",
			pod:       func() *v1.Pod { return burstablePod("1Ki") },
			container: func(p *v1.Pod) *v1.Container { return &p.Spec.Containers[0] },
			want:      999,
		},
		{
			desc:      "burstable huge request stays above guaranteed",
			pod:       func() *v1.Pod { return burstablePod("20Gi") },
			container: func(p *v1.Pod) *v1.Container { return &p.Spec.Containers[0] },
			want:      3,
		},
		{
			desc: "sidecar gets no more than the smallest regular container",
			pod: func() *v1.Pod {
				p := burstablePod("2Gi", "4Gi")
				p.Spec.InitContainers = []v1.Container{{Name: "side", Image: testImage, RestartPolicy: &always,
					Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Mi")}}}}
				return p
			},
			container: func(p *v1.Pod) *v1.Container { return &p.Spec.InitContainers[0] },
			want:      800,
		},
		{
			desc: "node-critical static pod",
			pod: func() *v1.Pod {
				p := burstablePod("1Gi")
				p.Annotations = map[string]string{defaults.ConfigSourceAnnotationKey: "file"}
				p.Spec.PriorityClassName = "system-node-critical"
				return p
			},
			container: func(p *v1.Pod) *v1.Container { return &p.Spec.Containers[0] },
			want:      -997,
		},
		{
			desc: "system-node-critical class alone is not critical",
			pod: func() *v1.Pod {
				p := burstablePod("1Gi")
				p.Annotations = map[string]string{defaults.ConfigSourceAnnotationKey: "api"}
				p.Spec.PriorityClassName = "system-node-critical"
				return p
			},
			container: func(p *v1.Pod) *v1.Container { return &p.Spec.Containers[0] },
			want:      900,
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := tc.pod()
			cfg := generate(t, pod, tc.container(pod), 0, containerOpts(newFakeFS()))
			if got := cfg.GetLinux().GetResources().GetOomScoreAdj(); got != tc.want {
				t.Errorf("oom_score_adj = %d, want %d", got, tc.want)
			}
		})
	}

	pod := burstablePod("1Gi")
	opts := containerOpts(newFakeFS())
	opts.MachineMemoryCapacity = 0
	if _, err := generateContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 0, nil, "img", opts); !errors.Is(err, errdefs.ErrFailedPrecondition) {
		t.Errorf("burstable without machine capacity: err = %v, want failed precondition", err)
	}
}

func TestContainerResources(t *testing.T) {
	cases := []struct {
		desc      string
		resources v1.ResourceRequirements
		podLimits v1.ResourceList
		cfs       CPUCFS
		want      *runtimeapi.LinuxContainerResources
	}{
		{
			desc: "nothing set: minimum shares, no quota",
			want: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000},
		},
		{
			desc: "request and limit",
			resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("256Mi")},
			},
			want: &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuQuota: 50000, CpuPeriod: 100000, MemoryLimitInBytes: 256 << 20},
		},
		{
			desc:      "limit only: shares from the limit",
			resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}},
			want:      &runtimeapi.LinuxContainerResources{CpuShares: 2048, CpuQuota: 200000, CpuPeriod: 100000},
		},
		{
			desc:      "tiny limit: quota at least 1ms",
			resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1m")}},
			want:      &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuQuota: 1000, CpuPeriod: 100000},
		},
		{
			desc:      "pod-level limits stand in for container limits",
			podLimits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
			want:      &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuQuota: 100000, CpuPeriod: 100000, MemoryLimitInBytes: gi},
		},
		{
			desc:      "quota disabled",
			resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}},
			cfs:       CPUCFS{DisableQuota: true},
			want:      &runtimeapi.LinuxContainerResources{CpuShares: 2048},
		},
		{
			desc:      "a 50ms quota period",
			resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}},
			cfs:       CPUCFS{QuotaPeriod: 50 * time.Millisecond},
			want:      &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuQuota: 25000, CpuPeriod: 50000},
		},
		{
			desc:      "a 5ms period: the quota is at least 1ms",
			resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}},
			cfs:       CPUCFS{QuotaPeriod: 5 * time.Millisecond},
			want:      &runtimeapi.LinuxContainerResources{CpuShares: 102, CpuQuota: 1000, CpuPeriod: 5000},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			c := &pod.Spec.Containers[0]
			c.Resources = tc.resources
			if tc.podLimits != nil {
				pod.Spec.Resources = &v1.ResourceRequirements{Limits: tc.podLimits}
			}
			opts := containerOpts(newFakeFS())
			opts.CFS = tc.cfs
			got := generate(t, pod, c, 0, opts).GetLinux().GetResources()
			if got.CpuShares != tc.want.CpuShares || got.CpuQuota != tc.want.CpuQuota || got.CpuPeriod != tc.want.CpuPeriod ||
				got.MemoryLimitInBytes != tc.want.MemoryLimitInBytes {
				t.Errorf("resources = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestContainerSecurityContext(t *testing.T) {
	unmasked := v1.UnmaskedProcMount
	cases := []struct {
		desc   string
		podSC  *v1.PodSecurityContext
		sc     *v1.SecurityContext
		opts   func(*ContainerOptions)
		target string
		check  func(*testing.T, *runtimeapi.LinuxContainerSecurityContext)
	}{
		{
			desc: "defaults: masked paths, unconfined seccomp, no no_new_privs",
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if !reflect.DeepEqual(sc.MaskedPaths, defaultMaskedPaths) || !reflect.DeepEqual(sc.ReadonlyPaths, defaultReadonlyPaths) {
					t.Errorf("masked %v readonly %v", sc.MaskedPaths, sc.ReadonlyPaths)
				}
				if sc.GetSeccomp().GetProfileType() != runtimeapi.SecurityProfile_Unconfined || sc.NoNewPrivs || sc.Privileged {
					t.Errorf("seccomp %v no_new_privs %t privileged %t", sc.GetSeccomp(), sc.NoNewPrivs, sc.Privileged)
				}
			},
		},
		{
			desc: "privileged with capabilities",
			sc: &v1.SecurityContext{
				Privileged:   new(true),
				Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN", "SYS_TIME"}, Drop: []v1.Capability{"ALL"}},
			},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if !sc.Privileged {
					t.Error("not privileged")
				}
				if !reflect.DeepEqual(sc.GetCapabilities().GetAddCapabilities(), []string{"NET_ADMIN", "SYS_TIME"}) ||
					!reflect.DeepEqual(sc.GetCapabilities().GetDropCapabilities(), []string{"ALL"}) {
					t.Errorf("capabilities = %v", sc.GetCapabilities())
				}
			},
		},
		{
			desc:  "container overrides pod user, pod group kept, groups from pod",
			podSC: &v1.PodSecurityContext{RunAsUser: new(int64(1000)), RunAsGroup: new(int64(100)), FSGroup: new(int64(5)), SupplementalGroups: []int64{6}},
			sc:    &v1.SecurityContext{RunAsUser: new(int64(2000)), ReadOnlyRootFilesystem: new(true), AllowPrivilegeEscalation: new(false)},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.GetRunAsUser().GetValue() != 2000 || sc.GetRunAsGroup().GetValue() != 100 {
					t.Errorf("run as %v/%v, want 2000/100", sc.GetRunAsUser(), sc.GetRunAsGroup())
				}
				if !reflect.DeepEqual(sc.SupplementalGroups, []int64{5, 6}) {
					t.Errorf("groups = %v, want [5 6]", sc.SupplementalGroups)
				}
				if !sc.ReadonlyRootfs || !sc.NoNewPrivs {
					t.Errorf("readonly rootfs %t no_new_privs %t, want both", sc.ReadonlyRootfs, sc.NoNewPrivs)
				}
			},
		},
		{
			desc: "allowPrivilegeEscalation true leaves no_new_privs off",
			sc:   &v1.SecurityContext{AllowPrivilegeEscalation: new(true)},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.NoNewPrivs {
					t.Error("no_new_privs set")
				}
			},
		},
		{
			desc: "unmasked proc",
			sc:   &v1.SecurityContext{ProcMount: &unmasked},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if len(sc.MaskedPaths) != 0 || len(sc.ReadonlyPaths) != 0 {
					t.Errorf("masked %v readonly %v, want none", sc.MaskedPaths, sc.ReadonlyPaths)
				}
			},
		},
		{
			desc:  "pod seccomp localhost, container wins with runtime default",
			podSC: &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: new("p.json")}},
			sc:    &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.GetSeccomp().GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault {
					t.Errorf("seccomp = %v", sc.GetSeccomp())
				}
			},
		},
		{
			desc:  "pod seccomp localhost",
			podSC: &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: new("p.json")}},
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.GetSeccomp().GetProfileType() != runtimeapi.SecurityProfile_Localhost || sc.GetSeccomp().GetLocalhostRef() != DefaultSeccompProfileRoot+"/p.json" {
					t.Errorf("seccomp = %v", sc.GetSeccomp())
				}
			},
		},
		{
			desc: "seccomp default",
			opts: func(o *ContainerOptions) { o.SeccompDefault = true },
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				if sc.GetSeccomp().GetProfileType() != runtimeapi.SecurityProfile_RuntimeDefault {
					t.Errorf("seccomp = %v", sc.GetSeccomp())
				}
			},
		},
		{
			desc:   "ephemeral target joins the target's PID namespace",
			target: "abc123",
			check: func(t *testing.T, sc *runtimeapi.LinuxContainerSecurityContext) {
				ns := sc.GetNamespaceOptions()
				if ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != "abc123" {
					t.Errorf("namespaces = %v", ns)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			pod.Spec.SecurityContext = tc.podSC
			c := &pod.Spec.Containers[0]
			c.SecurityContext = tc.sc
			opts := containerOpts(newFakeFS())
			opts.TargetContainerID = tc.target
			if tc.opts != nil {
				tc.opts(&opts)
			}
			tc.check(t, generate(t, pod, c, 0, opts).GetLinux().GetSecurityContext())
		})
	}
}

func TestDefaultPathsMatchKubelet(t *testing.T) {
	// The kubelet's list (securitycontext/util.go) in its order; a change
	// here must be a deliberate follow of the kubelet.
	for _, p := range []string{"/proc/kcore", "/proc/keys", "/sys/firmware", "/sys/devices/virtual/powercap"} {
		if !slices.Contains(defaultMaskedPaths, p) {
			t.Errorf("%s not masked", p)
		}
	}
	if !slices.Contains(defaultReadonlyPaths, "/proc/sys") {
		t.Error("/proc/sys not read-only")
	}
}

// An emptyDir is world-writable on the node, whatever sync's umask, so that
// a container running as any user can write to it (the kubelet's emptyDir
// setupDir; e2e "EmptyDir volumes ... (non-root,0777,default)").
func TestGenerateContainerConfigEmptyDirMode(t *testing.T) {
	pod := makeTestPod()
	pod.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []v1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	root := t.TempDir()
	opts := ContainerOptions{
		PodLogsRoot:           filepath.Join(root, "logs"),
		PodVolumesRoot:        filepath.Join(root, "pods"),
		PodContainersRoot:     filepath.Join(root, "pods"),
		FS:                    OSFS{},
		MachineMemoryCapacity: 10 * gi,
	}
	var cfg *runtimeapi.ContainerConfig
	withUmask(t, 0o022, func() { cfg = generate(t, pod, c, 0, opts) })
	dir := filepath.Join(root, "pods", "uid-1", "volumes", "kubernetes.io~empty-dir", "scratch")
	if len(cfg.Mounts) == 0 || cfg.Mounts[0].HostPath != dir {
		t.Fatalf("mounts = %v, want %s first", cfg.Mounts, dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o777 {
		t.Errorf("emptyDir mode %v, want -rwxrwxrwx", got)
	}
}
