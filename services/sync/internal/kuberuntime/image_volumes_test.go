package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/events"
)

const toolsImage = "registry.example.com/private/tools:1"

// withImageVolume gives the pod an image volume "tools" of toolsImage
// under policy, mounted by foo1 at /mnt/img with subPath.
func withImageVolume(pod *v1.Pod, policy v1.PullPolicy, subPath string) {
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "tools", VolumeSource: v1.VolumeSource{
		Image: &v1.ImageVolumeSource{Reference: toolsImage, PullPolicy: policy},
	}})
	pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
		v1.VolumeMount{Name: "tools", MountPath: "/mnt/img", SubPath: subPath})
}

func TestImageVolumeMounts(t *testing.T) {
	tools := &runtimeapi.ImageSpec{Image: "sha256:tools", UserSpecifiedImage: toolsImage}
	private := runtimeapi.MountPropagation_PROPAGATION_PRIVATE
	cases := []struct {
		desc   string
		mount  v1.VolumeMount
		pulled map[string]*runtimeapi.ImageSpec
		want   *runtimeapi.Mount
		wantIs error
	}{{
		desc:   "the whole image, read-only although the mount does not ask",
		mount:  v1.VolumeMount{Name: "tools", MountPath: "/mnt/img"},
		pulled: map[string]*runtimeapi.ImageSpec{"tools": tools},
		want:   &runtimeapi.Mount{ContainerPath: "/mnt/img", Image: tools, Readonly: true, Propagation: private},
	}, {
		desc:   "a subPath is a path in the image, for the runtime",
		mount:  v1.VolumeMount{Name: "tools", MountPath: "/mnt/bin", SubPath: "bin", ReadOnly: true},
		pulled: map[string]*runtimeapi.ImageSpec{"tools": tools},
		want:   &runtimeapi.Mount{ContainerPath: "/mnt/bin", Image: tools, ImageSubPath: "bin", Readonly: true, Propagation: private},
	}, {
		desc:   "a subPathExpr is expanded",
		mount:  v1.VolumeMount{Name: "tools", MountPath: "/mnt/pod", SubPathExpr: "by-pod/$(POD)"},
		pulled: map[string]*runtimeapi.ImageSpec{"tools": tools},
		want:   &runtimeapi.Mount{ContainerPath: "/mnt/pod", Image: tools, ImageSubPath: "by-pod/web", Readonly: true, Propagation: private},
	}, {
		desc:   "a subPath out of the image",
		mount:  v1.VolumeMount{Name: "tools", MountPath: "/mnt/etc", SubPath: "../etc"},
		pulled: map[string]*runtimeapi.ImageSpec{"tools": tools},
		wantIs: errdefs.ErrInvalidArgument,
	}, {
		desc:   "an image SyncPod did not pull",
		mount:  v1.VolumeMount{Name: "tools", MountPath: "/mnt/img"},
		wantIs: errdefs.ErrFailedPrecondition,
	}}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			pod.Spec.Volumes = []v1.Volume{{Name: "tools", VolumeSource: v1.VolumeSource{
				Image: &v1.ImageVolumeSource{Reference: toolsImage, PullPolicy: v1.PullIfNotPresent},
			}}}
			c := &pod.Spec.Containers[0]
			c.Env = []v1.EnvVar{fieldEnv("POD", "metadata.name")}
			c.VolumeMounts = []v1.VolumeMount{tc.mount}
			fs := newFakeFS()
			opts := containerOpts(fs)
			opts.ImageVolumes = tc.pulled
			cfg, err := generateContainerConfig(context.Background(), pod, c, 0, []string{testPodIP}, "sha256:abc", opts)
			if tc.wantIs != nil {
				if !errors.Is(err, tc.wantIs) || !strings.Contains(err.Error(), "volumeMounts[0]") {
					t.Fatalf("error %v, want %v naming the mount", err, tc.wantIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("generateContainerConfig: %v", err)
			}
			if got := cfg.Mounts[0]; !proto.Equal(got, tc.want) {
				t.Errorf("mount = %v, want %v", got, tc.want)
			}
			for d := range fs.dirs {
				if strings.Contains(d, "/volumes/") {
					t.Errorf("created %s: an image volume has nothing on the node", d)
				}
			}
		})
	}
}

// imageVolumeCRI is a runtime whose image service holds the images in
// present (by reference; their ID is "sha256:<reference>"), logs each pull
// among the mutations as "PullImage <image> <user>", so that its order
// against CreateContainer shows, fails the pulls of the images in failing,
// and keeps the created containers' configs.
type imageVolumeCRI struct {
	*mutationRecorder
	mu      sync.Mutex
	present map[string]bool
	failing map[string]bool
	configs map[string]*runtimeapi.ContainerConfig
}

func newImageVolumeCRI(present ...string) *imageVolumeCRI {
	f := &imageVolumeCRI{mutationRecorder: &mutationRecorder{}, present: map[string]bool{testImage: true},
		failing: map[string]bool{}, configs: map[string]*runtimeapi.ContainerConfig{}}
	for _, p := range present {
		f.present[p] = true
	}
	return f
}

func (f *imageVolumeCRI) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := strings.TrimPrefix(req.GetImage().GetImage(), "sha256:")
	if !f.present[name] {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "sha256:" + name}}, nil
}

func (f *imageVolumeCRI) PullImage(_ context.Context, req *runtimeapi.PullImageRequest, _ ...grpc.CallOption) (*runtimeapi.PullImageResponse, error) {
	image := req.GetImage().GetImage()
	f.record(strings.TrimSpace("PullImage " + image + " " + req.GetAuth().GetUsername()))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failing[image] {
		return nil, status.Errorf(codes.NotFound, "pull %s: not found", image)
	}
	f.present[image] = true
	return &runtimeapi.PullImageResponse{ImageRef: "sha256:" + image}, nil
}

func (f *imageVolumeCRI) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest, opts ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error) {
	f.mu.Lock()
	f.configs[req.GetConfig().GetMetadata().GetName()] = req.GetConfig()
	f.mu.Unlock()
	return f.mutationRecorder.CreateContainer(ctx, req, opts...)
}

func (f *imageVolumeCRI) config(name string) *runtimeapi.ContainerConfig {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.configs[name]
}

func newImageVolumeManager(t *testing.T, cri *imageVolumeCRI, recorder events.EventRecorder) *Manager {
	dir := t.TempDir()
	objects := &fakeObjects{secrets: map[string]*v1.Secret{"default/right": pullSecret("right", "u2", "alice", "secret")}}
	return NewManager(cri, cri, ManagerOptions{
		Sandbox:   SandboxOptions{PodLogsRoot: dir},
		Container: ContainerOptions{PodLogsRoot: dir, PodContainersRoot: dir, PodVolumesRoot: dir, EnvOptions: EnvOptions{Objects: objects}},
		Recorder:  recorder,
	})
}

// The volume's image is made present before any container is created,
// with the volume's pull policy and the pod's pull secrets, and the
// containers that mount it get a read-only mount of that image.
func TestSyncPodPullsImageVolumes(t *testing.T) {
	cases := []struct {
		desc      string
		policy    v1.PullPolicy
		present   bool
		wantPulls []string
		wantEvent string
	}{{
		desc:      "IfNotPresent, absent: pulled with the pod's login",
		policy:    v1.PullIfNotPresent,
		wantPulls: []string{"PullImage " + toolsImage + " alice"},
		wantEvent: fmt.Sprintf("Normal Pulling Pulling image %q", toolsImage),
	}, {
		desc:      "IfNotPresent, present: used as is",
		policy:    v1.PullIfNotPresent,
		present:   true,
		wantEvent: fmt.Sprintf("Normal Pulled Container image %q already present on machine and can be accessed by the pod", toolsImage),
	}, {
		desc:      "Always: pulled although present",
		policy:    v1.PullAlways,
		present:   true,
		wantPulls: []string{"PullImage " + toolsImage + " alice"},
		wantEvent: fmt.Sprintf("Normal Pulling Pulling image %q", toolsImage),
	}, {
		desc:    "Never, present: used as is",
		policy:  v1.PullNever,
		present: true,
	}}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			cri := newImageVolumeCRI()
			if tc.present {
				cri.present[toolsImage] = true
			}
			recorder := &events.FakeRecorder{}
			m := newImageVolumeManager(t, cri, recorder)
			pod := makeTestPod()
			pod.Annotations = map[string]string{"team": "a"}
			pod.Spec.ImagePullSecrets = []v1.LocalObjectReference{{Name: "right"}}
			withImageVolume(pod, tc.policy, "bin")

			if _, err := m.SyncPod(context.Background(), pod, &container.PodStatus{ID: pod.UID}, &fakeProbes{}, false); err != nil {
				t.Fatalf("SyncPod: %v", err)
			}
			calls := cri.calls()
			var pulls []string
			for _, c := range calls {
				if strings.HasPrefix(c, "PullImage ") {
					pulls = append(pulls, c)
				}
			}
			if !slices.Equal(pulls, tc.wantPulls) {
				t.Errorf("pulls %q, want %q", pulls, tc.wantPulls)
			}
			if len(pulls) > 0 && slices.Index(calls, pulls[0]) > slices.Index(calls, "CreateContainer foo1") {
				t.Errorf("calls %q: the image volume was pulled after the container was created", calls)
			}
			want := &runtimeapi.Mount{
				ContainerPath: "/mnt/img",
				Image:         &runtimeapi.ImageSpec{Image: "sha256:" + toolsImage, UserSpecifiedImage: toolsImage, Annotations: map[string]string{"team": "a"}},
				ImageSubPath:  "bin",
				Readonly:      true,
				Propagation:   runtimeapi.MountPropagation_PROPAGATION_PRIVATE,
			}
			if got := cri.config("foo1").GetMounts()[0]; !proto.Equal(got, want) {
				t.Errorf("foo1's mount = %v, want %v", got, want)
			}
			for _, name := range []string{"foo2", "foo3"} {
				for _, mnt := range cri.config(name).GetMounts() {
					if mnt.GetImage() != nil {
						t.Errorf("%s, which does not mount the volume, got %v", name, mnt)
					}
				}
			}
			// The pull's events are the pod's, as the kubelet's objRef.
			if tc.wantEvent != "" && !slices.Contains(recorder.Events(), tc.wantEvent) {
				t.Errorf("no event %q in %q", tc.wantEvent, recorder.Events())
			}
		})
	}
}

// A failed pull of an image volume fails, late, each container that mounts
// it, with the pull's waiting reason, as the kubelet's
// toKubeContainerImageVolumes; the others start.
func TestSyncPodImageVolumePullFailure(t *testing.T) {
	ctx := context.Background()
	cri := newImageVolumeCRI()
	cri.failing[toolsImage] = true
	recorder := &events.FakeRecorder{}
	m := newImageVolumeManager(t, cri, recorder)
	pod := makeTestPod()
	withImageVolume(pod, v1.PullIfNotPresent, "")

	_, err := m.SyncPod(ctx, pod, &container.PodStatus{ID: pod.UID}, &fakeProbes{}, false)
	if err == nil || !strings.Contains(err.Error(), `image volume "tools"`) {
		t.Fatalf("SyncPod error %v, want the image volume's", err)
	}
	calls := cri.calls()
	if slices.Contains(calls, "CreateContainer foo1") || !slices.Contains(calls, "CreateContainer foo2") || !slices.Contains(calls, "CreateContainer foo3") {
		t.Errorf("calls %q: want foo2 and foo3 created, not foo1", calls)
	}
	w, ok := m.ContainerWaiting(pod.UID, "foo1")
	if !ok || w.Reason != "ErrImagePull" || !strings.Contains(w.Message, "not found") {
		t.Errorf("foo1 waits %+v, want ErrImagePull with the pull's error", w)
	}
	for _, want := range []string{
		fmt.Sprintf("Warning Failed Failed to pull image %q: rpc error: code = NotFound desc = pull %s: not found", toolsImage, toolsImage),
		"Warning Failed Error: ErrImagePull spec.containers{foo1}",
	} {
		if !slices.Contains(recorder.Events(), want) {
			t.Errorf("no event %q in %q", want, recorder.Events())
		}
	}

	// The next sync, within the back-off, does not pull again.
	ps := makeTestPodStatus(pod)
	removeStatuses(ps, "foo1")
	before := len(cri.calls())
	if _, err := m.SyncPod(ctx, pod, ps, &fakeProbes{}, false); err == nil {
		t.Fatal("SyncPod in the back-off succeeded")
	}
	if again := cri.calls()[before:]; len(again) > 0 {
		t.Errorf("calls in the back-off: %q", again)
	}
	w, _ = m.ContainerWaiting(pod.UID, "foo1")
	if w.Reason != "ImagePullBackOff" || !strings.HasPrefix(w.Message, fmt.Sprintf("Back-off pulling image %q: ErrImagePull: ", toolsImage)) {
		t.Errorf("foo1 waits %+v, want ImagePullBackOff with the last pull's error", w)
	}
	if evs := recorder.Events(); !slices.Contains(evs, "Warning Failed Error: ImagePullBackOff spec.containers{foo1}") {
		t.Errorf("no Failed event for the back-off in %q", evs)
	}
}

// Under Never, an absent image volume keeps its containers waiting with
// ErrImageNeverPull.
func TestSyncPodImageVolumeNeverPull(t *testing.T) {
	cri := newImageVolumeCRI()
	recorder := &events.FakeRecorder{}
	m := newImageVolumeManager(t, cri, recorder)
	pod := makeTestPod()
	withImageVolume(pod, v1.PullNever, "")

	if _, err := m.SyncPod(context.Background(), pod, &container.PodStatus{ID: pod.UID}, &fakeProbes{}, false); err == nil {
		t.Fatal("SyncPod succeeded")
	}
	if w, _ := m.ContainerWaiting(pod.UID, "foo1"); w.Reason != ReasonErrImageNeverPull {
		t.Errorf("foo1 waits %+v, want %s", w, ReasonErrImageNeverPull)
	}
	want := fmt.Sprintf("Warning ErrImageNeverPull Container image %q is not present with pull policy of Never", toolsImage)
	if !slices.Contains(recorder.Events(), want) {
		t.Errorf("no event %q in %q", want, recorder.Events())
	}
	if slices.ContainsFunc(cri.calls(), func(c string) bool { return strings.HasPrefix(c, "PullImage") }) {
		t.Errorf("pulled under Never: %q", cri.calls())
	}
}

// A sync that starts nothing neither looks at nor pulls image volumes (as
// kubernetes/kubernetes#138655), so a running or crash-looping pod records
// no event each time.
func TestSyncPodImageVolumesNotPulledWithoutStart(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		status func(*v1.Pod) *container.PodStatus
		// syncs before the one checked
		before int
	}{
		{desc: "running pod", status: makeTestPodStatus},
		{desc: "the only container to start is in crash-loop back-off", status: justExited, before: 1},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cri := &countingImages{imageVolumeCRI: newImageVolumeCRI(toolsImage)}
			recorder := &events.FakeRecorder{}
			m := newImageVolumeManager(t, cri.imageVolumeCRI, recorder)
			m.images = cri
			pod := makeTestPod()
			withImageVolume(pod, v1.PullAlways, "")
			ps := tc.status(pod)
			for range tc.before {
				_, _ = m.SyncPod(context.Background(), pod, ps, &fakeProbes{}, false)
			}
			statuses, calls, evs := cri.statuses, len(cri.calls()), len(recorder.Events())

			_, _ = m.SyncPod(context.Background(), pod, ps, &fakeProbes{}, false)
			if cri.statuses != statuses || len(cri.calls()) != calls {
				t.Errorf("sync: %d ImageStatus calls, mutations %q; want none", cri.statuses-statuses, cri.calls()[calls:])
			}
			for _, ev := range recorder.Events()[evs:] {
				if strings.Contains(ev, toolsImage) {
					t.Errorf("event %q", ev)
				}
			}
		})
	}
}

// countingImages counts ImageStatus calls.
type countingImages struct {
	*imageVolumeCRI
	statuses int
}

func (f *countingImages) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest, opts ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error) {
	f.statuses++
	return f.imageVolumeCRI.ImageStatus(ctx, req, opts...)
}

// An image that cannot be inspected fails as in the kubelet's
// imagePullPrecheck: ImageInspectError and an InspectFailed event.
func TestEnsureImageInspectError(t *testing.T) {
	cri := &failingImageStatus{imageVolumeCRI: newImageVolumeCRI()}
	recorder := &events.FakeRecorder{}
	m := newImageVolumeManager(t, cri.imageVolumeCRI, recorder)
	m.images = cri
	pod := makeTestPod()
	pod.Spec.Containers = pod.Spec.Containers[:1]

	if _, err := m.SyncPod(context.Background(), pod, &container.PodStatus{ID: pod.UID}, &fakeProbes{}, false); err == nil {
		t.Fatal("SyncPod succeeded")
	}
	msg := fmt.Sprintf("Failed to inspect image %q: rpc error: code = Unavailable desc = image store down", testImage)
	if w, _ := m.ContainerWaiting(pod.UID, "foo1"); w.Reason != ReasonImageInspectError || w.Message != msg {
		t.Errorf("foo1 waits %+v, want %s: %s", w, ReasonImageInspectError, msg)
	}
	if want := "Warning InspectFailed " + msg + " spec.containers{foo1}"; !slices.Contains(recorder.Events(), want) {
		t.Errorf("no event %q in %q", want, recorder.Events())
	}
}

// failingImageStatus fails every ImageStatus.
type failingImageStatus struct{ *imageVolumeCRI }

func (f *failingImageStatus) ImageStatus(context.Context, *runtimeapi.ImageStatusRequest, ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error) {
	return nil, status.Error(codes.Unavailable, "image store down")
}
