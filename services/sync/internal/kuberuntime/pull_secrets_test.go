package kuberuntime

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/pullcreds"
)

// privateRegistry is an image service whose images under
// "registry.example.com/private/" need the login alice:secret; every other
// image is public. Pulled images stay present.
type privateRegistry struct {
	*mutationRecorder
	mu      sync.Mutex
	present map[string]bool
	// pulls are "image user" (user empty when anonymous), in order.
	pulls []string
}

func (f *privateRegistry) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.present[req.GetImage().GetImage()] {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	return &runtimeapi.ImageStatusResponse{Image: &runtimeapi.Image{Id: "sha256:" + req.GetImage().GetImage()}}, nil
}

func (f *privateRegistry) PullImage(_ context.Context, req *runtimeapi.PullImageRequest, _ ...grpc.CallOption) (*runtimeapi.PullImageResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	image := req.GetImage().GetImage()
	f.pulls = append(f.pulls, strings.TrimSpace(image+" "+req.GetAuth().GetUsername()))
	if strings.HasPrefix(image, "registry.example.com/private/") &&
		(req.GetAuth().GetUsername() != "alice" || req.GetAuth().GetPassword() != "secret") {
		return nil, status.Errorf(codes.Unknown, "pull %s: 401 Unauthorized", image)
	}
	f.present[image] = true
	return &runtimeapi.PullImageResponse{ImageRef: "sha256:" + image}, nil
}

func (f *privateRegistry) pullLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pulls)
}

func pullSecret(name, uid, user, password string) *v1.Secret {
	return &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid)},
		Type:       v1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{v1.DockerConfigJsonKey: fmt.Appendf(nil,
			`{"auths": {"registry.example.com": {"username": %q, "password": %q}}}`, user, password)},
	}
}

// podWithImage is a one-container pod of image under policy, with the
// named pull secrets.
func podWithImage(uid, image string, policy v1.PullPolicy, secrets ...string) *v1.Pod {
	pod := makeTestPod()
	pod.UID = types.UID(uid)
	pod.Spec.Containers = []v1.Container{{Name: "app", Image: image, ImagePullPolicy: policy}}
	for _, s := range secrets {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
	}
	return pod
}

// Pulls use the pod's pull secrets, and an image pulled with one is not
// handed to a pod that lacks the login (KubeletEnsureSecretPulledImages).
func TestPullSecrets(t *testing.T) {
	const private = "registry.example.com/private/app:1"
	cri := &privateRegistry{mutationRecorder: &mutationRecorder{}, present: map[string]bool{}}
	objects := &fakeObjects{secrets: map[string]*v1.Secret{
		"default/wrong":   pullSecret("wrong", "u1", "mallory", "guess"),
		"default/right":   pullSecret("right", "u2", "alice", "secret"),
		"default/copy":    pullSecret("copy", "u3", "alice", "secret"),
		"default/another": pullSecret("another", "u4", "bob", "other"),
	}}
	dir := t.TempDir()
	recorder := &events.FakeRecorder{}
	records, err := pullcreds.OpenRecords(filepath.Join(dir, "image-pulls.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(cri, cri, ManagerOptions{
		Sandbox:     SandboxOptions{PodLogsRoot: dir},
		Container:   ContainerOptions{PodLogsRoot: dir, PodContainersRoot: dir, PodVolumesRoot: dir, EnvOptions: EnvOptions{Objects: objects}},
		PullRecords: records,
		Recorder:    recorder,
	})
	start := func(pod *v1.Pod) error {
		t.Helper()
		_, err := m.SyncPod(context.Background(), pod, &container.PodStatus{ID: pod.UID}, &fakeProbes{}, false)
		return err
	}
	steps := []struct {
		desc      string
		pod       *v1.Pod
		wantErr   string
		wantPulls []string
	}{{
		desc:      "no secret: refused by the registry",
		pod:       podWithImage("p1", private, v1.PullIfNotPresent),
		wantErr:   "401 Unauthorized",
		wantPulls: []string{private},
	}, {
		desc:      "a missing secret is skipped, each login is tried in turn",
		pod:       podWithImage("p2", private, v1.PullIfNotPresent, "gone", "wrong", "right"),
		wantPulls: []string{private + " mallory", private + " alice"},
	}, {
		desc:      "present, but pulled with a login the pod lacks: pulled again",
		pod:       podWithImage("p3", private, v1.PullIfNotPresent, "another"),
		wantErr:   "401 Unauthorized",
		wantPulls: []string{private + " bob"},
	}, {
		desc:    "present, and never pullable: reads as absent",
		pod:     podWithImage("p4", private, v1.PullNever),
		wantErr: "is not present with pull policy of Never",
	}, {
		desc: "present, and the pod holds the same login in another Secret: no pull",
		pod:  podWithImage("p5", private, v1.PullIfNotPresent, "copy"),
	}, {
		desc: "a public image: pulled anonymously, then present for every pod",
		pod:  podWithImage("p6", "registry.example.com/public/app:1", v1.PullIfNotPresent, "right"),
		// The login matches the host, so it is sent; the image is
		// recorded as pulled with it.
		wantPulls: []string{"registry.example.com/public/app:1 alice"},
	}, {
		desc:      "docker hub image without secrets",
		pod:       podWithImage("p7", "busybox:1.36", v1.PullIfNotPresent),
		wantPulls: []string{"busybox:1.36"},
	}, {
		desc: "pulled anonymously: any pod may use it",
		pod:  podWithImage("p8", "busybox:1.36", v1.PullNever, "another"),
	}}
	for _, s := range steps {
		before := len(cri.pullLog())
		err := start(s.pod)
		switch {
		case s.wantErr == "" && err != nil:
			t.Errorf("%s: %v", s.desc, err)
		case s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", s.desc, err, s.wantErr)
		}
		if got := cri.pullLog()[before:]; !slices.Equal(got, s.wantPulls) {
			t.Errorf("%s: pulls %q, want %q", s.desc, got, s.wantPulls)
		}
	}
	evs := strings.Join(recorder.Events(), "\n")
	for _, want := range []string{
		"Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (gone); attempting to pull the image may not succeed.",
		`Normal Pulled Container image "registry.example.com/private/app:1" already present on machine and can be accessed by the pod`,
		`Warning ErrImageNeverPull Container image "registry.example.com/private/app:1" is not present with pull policy of Never`,
	} {
		if !strings.Contains(evs, want) {
			t.Errorf("no event %q in:\n%s", want, evs)
		}
	}

	// A new Manager over the same records (sync restarted) still keeps
	// the private image from a pod without the login.
	records2, err := pullcreds.OpenRecords(filepath.Join(dir, "image-pulls.json"))
	if err != nil {
		t.Fatal(err)
	}
	m = NewManager(cri, cri, ManagerOptions{
		Sandbox:     SandboxOptions{PodLogsRoot: dir},
		Container:   ContainerOptions{PodLogsRoot: dir, PodContainersRoot: dir, PodVolumesRoot: dir, EnvOptions: EnvOptions{Objects: objects}},
		PullRecords: records2,
	})
	if err := start(podWithImage("p9", private, v1.PullNever)); err == nil {
		t.Error("after a restart, a pod without the login ran the private image")
	}
}
