package kuberuntime

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/events"
)

func int32p(v int32) *int32 { return &v }

// payloadView renders a payload as "mode content" per path.
func payloadView(t *testing.T, pod *v1.Pod, vol v1.Volume, opts ContainerOptions) (map[string]string, error) {
	t.Helper()
	p, err := volumePayload(t.Context(), pod, &vol, "spec.volumes[0]", opts)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range p {
		out[k] = os.FileMode(v.Mode).String() + " " + string(v.Data)
	}
	return out, nil
}

func TestVolumePayload(t *testing.T) {
	objs := testObjects()
	objs.configMaps["default/bin"] = &v1.ConfigMap{Data: map[string]string{"t": "text"}, BinaryData: map[string][]byte{"b": {0, 1}}}
	cases := []struct {
		desc string
		vol  v1.VolumeSource
		want map[string]string
	}{
		{
			desc: "configMap: every key with the default mode, binary data too",
			vol:  v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "bin"}}},
			want: map[string]string{"t": "-rw-r--r-- text", "b": "-rw-r--r-- \x00\x01"},
		},
		{
			desc: "configMap items: paths and modes, optional missing key skipped",
			vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
				LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, DefaultMode: int32p(0o440), Optional: new(true),
				Items: []v1.KeyToPath{{Key: "A", Path: "dir/a.txt"}, {Key: "B", Path: "b", Mode: int32p(0o600)}, {Key: "nokey", Path: "x"}},
			}},
			want: map[string]string{"dir/a.txt": "-r--r----- a", "b": "-rw------- b"},
		},
		{
			desc: "missing optional configMap: empty",
			vol:  v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: new(true)}},
			want: map[string]string{},
		},
		{
			desc: "secret with defaultMode",
			vol:  v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds", DefaultMode: int32p(0o400)}},
			want: map[string]string{"USER": "-r-------- admin", "PASS": "-r-------- s3cret"},
		},
		{
			desc: "downwardAPI",
			vol: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
				{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				{Path: "name", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}, Mode: int32p(0o600)},
				{Path: "cpu", ResourceFieldRef: &v1.ResourceFieldSelector{ContainerName: "foo2", Resource: "limits.cpu"}},
			}}},
			want: map[string]string{"labels": "-rw-r--r-- app=\"web\"\ntier=\"front\"", "name": "-rw------- web", "cpu": "-rw-r--r-- 2"},
		},
		{
			desc: "projected: token bound to the pod, configMap, secret and downwardAPI with the volume's defaultMode",
			vol: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: int32p(0o444), Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: new(int64(600)), Path: "token"}},
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Items: []v1.KeyToPath{{Key: "LEVEL", Path: "level"}}}},
				{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Items: []v1.KeyToPath{{Key: "USER", Path: "user", Mode: int32p(0o400)}}}},
				{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
			}}},
			want: map[string]string{
				"token": "-r--r--r-- token-default-sa-[vault]", "level": "-r--r--r-- debug",
				"user": "-r-------- admin", "ns": "-r--r--r-- default",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := payloadView(t, envPod(), v1.Volume{Name: "v", VolumeSource: tc.vol}, ContainerOptions{EnvOptions: EnvOptions{Objects: objs}})
			if err != nil {
				t.Fatalf("volumePayload: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestServiceAccountTokenRequest(t *testing.T) {
	objs := testObjects()
	pod := envPod()
	vol := v1.Volume{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{ExpirationSeconds: new(int64(3607)), Path: "token"}},
	}}}}
	if _, err := payloadView(t, pod, vol, ContainerOptions{EnvOptions: EnvOptions{Objects: objs}}); err != nil {
		t.Fatal(err)
	}
	if len(objs.tokenRequests) != 1 {
		t.Fatalf("%d token requests", len(objs.tokenRequests))
	}
	spec := objs.tokenRequests[0].Spec
	if spec.Audiences != nil || *spec.ExpirationSeconds != 3607 || spec.BoundObjectRef.Kind != "Pod" ||
		spec.BoundObjectRef.Name != "web" || spec.BoundObjectRef.UID != "uid-1" {
		t.Errorf("token request %+v, bound to %+v", spec, spec.BoundObjectRef)
	}
}

// A refreshed token reaches the running pod: every sync sets the
// projected volume up again, and the token file is swapped for the token
// the token manager now serves (apiserver's TestObjectsServiceAccountToken
// shows it serves a new one after 80% of the old one's lifetime).
func TestProjectedTokenReplacedOnRefresh(t *testing.T) {
	root := t.TempDir()
	objs := testObjects()
	pod := envPod()
	pod.Spec.Volumes = []v1.Volume{{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{ExpirationSeconds: new(int64(600)), Path: "token"}},
	}}}}}
	m := NewManager(nil, nil, ManagerOptions{Container: ContainerOptions{PodVolumesRoot: root, EnvOptions: EnvOptions{Objects: objs}}})
	token := func() string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, "uid-1", "volumes", "kubernetes.io~projected", "kube-api-access", "token"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := m.setUpVolumes(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	first := token()
	objs.tokenGeneration = 1
	if err := m.setUpVolumes(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if got := token(); got == first || !strings.HasSuffix(got, "-gen1") {
		t.Errorf("after a refresh the token file holds %q (before: %q), want the new token", got, first)
	}
}

func TestVolumePayloadRejects(t *testing.T) {
	cases := []struct {
		desc    string
		vol     v1.VolumeSource
		objects ObjectGetter
		wantIs  error
		wantMsg string
	}{
		{
			desc:    "missing configMap: the kubelet's message",
			vol:     v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}},
			objects: testObjects(), wantIs: errdefs.ErrNotFound, wantMsg: `configmap "nope" not found`,
		},
		{
			desc: "missing configMap key",
			vol: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"},
				Items: []v1.KeyToPath{{Key: "nokey", Path: "x"}}}},
			objects: testObjects(), wantIs: errdefs.ErrNotFound, wantMsg: "configmap references non-existent config key: nokey",
		},
		{
			desc: "missing secret key",
			vol: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "creds",
				Items: []v1.KeyToPath{{Key: "nokey", Path: "x"}}}},
			objects: testObjects(), wantIs: errdefs.ErrNotFound, wantMsg: "references non-existent secret key: nokey",
		},
		{
			desc:   "configMap without an API server",
			vol:    v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			wantIs: errdefs.ErrNotImplemented, wantMsg: "spec.volumes[0].configMap",
		},
		{
			desc: "token without an API server",
			vol: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
			}}},
			wantIs: errdefs.ErrNotImplemented, wantMsg: "spec.volumes[0].projected.sources[0].serviceAccountToken",
		},
		{
			desc: "clusterTrustBundle",
			vol: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
				{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "b"}},
			}}},
			objects: testObjects(), wantIs: errdefs.ErrNotImplemented, wantMsg: "clusterTrustBundle",
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			_, err := payloadView(t, envPod(), v1.Volume{Name: "v", VolumeSource: tc.vol}, ContainerOptions{EnvOptions: EnvOptions{Objects: tc.objects}})
			if !errors.Is(err, tc.wantIs) {
				t.Fatalf("error %v is not %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not say %q", err, tc.wantMsg)
			}
		})
	}
}

// TestConfigMapVolumeMountAndRefresh writes a configMap volume through
// makeMounts on a real directory, then changes the ConfigMap and checks
// that setUpVolumes (run on every pod sync) brings the change.
func TestConfigMapVolumeMountAndRefresh(t *testing.T) {
	root := t.TempDir()
	objs := testObjects()
	pod := envPod()
	pod.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}, {Name: "cfg", MountPath: "/etc/level", SubPath: "LEVEL"}}
	opts := ContainerOptions{PodVolumesRoot: root, EnvOptions: EnvOptions{Objects: objs}}

	mounts, err := makeMounts(t.Context(), pod, c, nil, false, opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "uid-1", "volumes", "kubernetes.io~configmap", "cfg")
	if len(mounts) != 2 || mounts[0].HostPath != dir || !mounts[0].Readonly ||
		mounts[1].HostPath != filepath.Join(dir, "LEVEL") || !mounts[1].Readonly {
		t.Fatalf("mounts %v", mounts)
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("LEVEL"); got != "debug" {
		t.Fatalf("LEVEL = %q", got)
	}

	objs.configMaps["default/cfg"] = &v1.ConfigMap{Data: map[string]string{"LEVEL": "info"}}
	rec := &events.FakeRecorder{}
	m := NewManager(nil, nil, ManagerOptions{Container: opts, Recorder: rec})
	if err := m.setUpVolumes(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	if got := read("LEVEL"); got != "info" {
		t.Errorf("after a sync LEVEL = %q, want info", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "A")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removed key A still there: %v", err)
	}

	delete(objs.configMaps, "default/cfg")
	if err := m.setUpVolumes(t.Context(), pod); err != nil {
		t.Errorf("a volume set up before is still mounted, got %v", err)
	}
	want := []string{`Warning FailedMount MountVolume.SetUp failed for volume "cfg" : configmap "cfg" not found`}
	if got := rec.Events(); !reflect.DeepEqual(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if got := read("LEVEL"); got != "info" {
		t.Errorf("a failed refresh changed LEVEL to %q", got)
	}
}

// TestMissingSourceBlocksStart: a non-optional Secret that does not exist
// keeps the pod's containers from starting, with the kubelet's events, and
// the pod starts once it exists.
func TestMissingSourceBlocksStart(t *testing.T) {
	objs := testObjects()
	pod := envPod()
	pod.Spec.Volumes = []v1.Volume{{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "later"}}}}
	rec := &events.FakeRecorder{}
	m := NewManager(nil, nil, ManagerOptions{Container: ContainerOptions{PodVolumesRoot: t.TempDir(), EnvOptions: EnvOptions{Objects: objs}}, Recorder: rec})

	err := m.setUpVolumes(t.Context(), pod)
	if err == nil || !strings.Contains(err.Error(), "unmounted volumes=[creds]") {
		t.Fatalf("error %v, want unmounted volumes=[creds]", err)
	}
	want := []string{
		`Warning FailedMount MountVolume.SetUp failed for volume "creds" : secret "later" not found`,
		`Warning FailedMount Unable to attach or mount volumes: unmounted volumes=[creds], unattached volumes=[]: MountVolume.SetUp failed for volume "creds" : secret "later" not found`,
	}
	if got := rec.Events(); !reflect.DeepEqual(got, want) {
		t.Errorf("events %q\nwant %q", got, want)
	}

	objs.secrets["default/later"] = &v1.Secret{Data: map[string][]byte{"k": []byte("v")}}
	if err := m.setUpVolumes(t.Context(), pod); err != nil {
		t.Fatalf("once the secret exists: %v", err)
	}
}

// TestSyncPodWaitsForVolumes: SyncPod creates no sandbox and no container
// while a volume was never set up, and starts the pod, with the volume
// mounted read-only, once its Secret exists.
func TestSyncPodWaitsForVolumes(t *testing.T) {
	objs := testObjects()
	cri := &imageUserRecorder{mutationRecorder: &mutationRecorder{}, present: true}
	dir := t.TempDir()
	m := NewManager(cri, cri, ManagerOptions{
		Sandbox:   SandboxOptions{PodLogsRoot: dir},
		Container: ContainerOptions{PodLogsRoot: dir, PodContainersRoot: dir, PodVolumesRoot: dir, EnvOptions: EnvOptions{Objects: objs}},
	})
	pod := makeTestPod()
	pod.Spec.Containers = pod.Spec.Containers[:1]
	pod.Spec.Volumes = []v1.Volume{{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "later"}}}}
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "creds", MountPath: "/creds"}}

	_, err := m.SyncPod(t.Context(), pod, &container.PodStatus{ID: pod.UID}, &fakeProbes{}, false)
	if err == nil || !strings.Contains(err.Error(), "unmounted volumes=[creds]") {
		t.Fatalf("SyncPod error %v, want unmounted volumes", err)
	}
	if calls := cri.calls(); len(calls) != 0 {
		t.Fatalf("runtime calls %v while a volume is missing", calls)
	}
	if _, waiting := m.ContainerWaiting(pod.UID, "foo1"); waiting {
		t.Error("a waiting reason was recorded: the container should show ContainerCreating")
	}

	objs.secrets["default/later"] = &v1.Secret{Data: map[string][]byte{"k": []byte("v")}}
	if _, err := m.SyncPod(t.Context(), pod, &container.PodStatus{ID: pod.UID}, &fakeProbes{}, false); err != nil {
		t.Fatalf("SyncPod once the secret exists: %v", err)
	}
	if len(cri.createConfig) != 1 {
		t.Fatalf("%d containers created, want 1", len(cri.createConfig))
	}
	mounts := cri.createConfig[0].GetMounts()
	if len(mounts) == 0 || mounts[0].GetContainerPath() != "/creds" || !mounts[0].GetReadonly() {
		t.Fatalf("mounts %v", mounts)
	}
	if b, err := os.ReadFile(filepath.Join(mounts[0].GetHostPath(), "k")); err != nil || string(b) != "v" {
		t.Errorf("secret file: %q, %v", b, err)
	}
}

func TestVolumeFSGroup(t *testing.T) {
	root := t.TempDir()
	pod := envPod()
	gid := int64(os.Getgid())
	pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: &gid}
	vol := v1.Volume{Name: "kube-api-access", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
		{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
		{Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Items: []v1.KeyToPath{{Key: "USER", Path: "user", Mode: int32p(0o400)}}}},
	}}}}
	dir, err := setUpAtomicVolume(t.Context(), pod, &vol, "spec.volumes[0]", ContainerOptions{PodVolumesRoot: root, EnvOptions: EnvOptions{Objects: testObjects()}})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{"token": 0o640, "user": 0o440} {
		fi, err := os.Stat(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
}

// The volume's directory is the root a container sees at the mount path:
// like the emptyDir the kubelet wraps each of these volumes in (emptyDir
// setupDir), it is 0777 whatever sync's umask, so a non-root container can
// reach the files (the e2e "as non-root" configMap and downward API specs).
func TestAtomicVolumeDirOpenToEveryUser(t *testing.T) {
	root := t.TempDir()
	vol := v1.Volume{Name: "podinfo", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
		Items: []v1.DownwardAPIVolumeFile{{Path: "podname", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}}}
	var dir string
	var err error
	withUmask(t, 0o077, func() {
		dir, err = setUpAtomicVolume(t.Context(), envPod(), &vol, "spec.volumes[0]", ContainerOptions{PodVolumesRoot: root, EnvOptions: EnvOptions{Objects: testObjects()}})
	})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o777 {
		t.Errorf("volume directory mode %v, want 0777", fi.Mode().Perm())
	}
}
