package kuberuntime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// stopRecorder is a RuntimeServiceClient that records StopContainer
// timeouts and reports containers with fixed annotations; any other call
// panics (embedded nil interface).
type stopRecorder struct {
	runtimeapi.RuntimeServiceClient
	annotations map[string]string
	mu          sync.Mutex
	timeouts    []int64
}

func (f *stopRecorder) StopContainer(_ context.Context, req *runtimeapi.StopContainerRequest, _ ...grpc.CallOption) (*runtimeapi.StopContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.timeouts = append(f.timeouts, req.GetTimeout())
	return &runtimeapi.StopContainerResponse{}, nil
}

func (f *stopRecorder) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: req.GetContainerId(), Annotations: f.annotations}}, nil
}

func int64p(v int64) *int64 { return &v }

func TestKillContainerGracePeriod(t *testing.T) {
	base := func(mutate func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u"},
			Spec: v1.PodSpec{
				TerminationGracePeriodSeconds: int64p(30),
				Containers:                    []v1.Container{{Name: "c", Image: "i"}},
			},
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	for _, tc := range []struct {
		desc        string
		pod         *v1.Pod
		noSpec      bool
		reason      ContainerKillReason
		override    *int64
		annotations map[string]string
		want        int64
	}{
		{desc: "the pod's termination grace period", pod: base(nil), want: 30},
		{desc: "the deletion grace period wins", pod: base(func(p *v1.Pod) { p.DeletionGracePeriodSeconds = int64p(5) }), want: 5},
		{desc: "floored at 2 s", pod: base(func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = int64p(1) }), want: 2},
		{desc: "an override replaces it", pod: base(nil), override: int64p(5), want: 5},
		// v1.36's killContainer floors after the override (older kubelets
		// let an override replace the floor too).
		{desc: "an override is floored at 2 s", pod: base(nil), override: int64p(0), want: 2},
		{desc: "a liveness kill takes the probe's grace period", pod: base(func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &v1.Probe{TerminationGracePeriodSeconds: int64p(7)}
		}), reason: ReasonLivenessProbe, want: 7},
		{desc: "an orphan takes its recorded grace period", noSpec: true,
			annotations: map[string]string{PodTerminationGracePeriodLabel: "12"}, want: 12},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := &stopRecorder{annotations: tc.annotations}
			m := NewManager(rt, nil, ManagerOptions{})
			var pod *v1.Pod
			var spec *v1.Container
			if !tc.noSpec {
				pod, spec = tc.pod, &tc.pod.Spec.Containers[0]
			}
			id := container.BuildContainerID("fake", "cid")
			if err := m.killContainer(context.Background(), pod, id, "c", spec, "test", tc.reason, tc.override, nil); err != nil {
				t.Fatal(err)
			}
			if len(rt.timeouts) != 1 || rt.timeouts[0] != tc.want {
				t.Errorf("StopContainer timeouts = %v, want [%d]", rt.timeouts, tc.want)
			}
		})
	}
}

func TestRestartCountFromLogDir(t *testing.T) {
	for _, tc := range []struct {
		desc  string
		files []string
		want  int
	}{
		{desc: "no directory", want: 0},
		{desc: "one instance", files: []string{"0.log"}, want: 1},
		{desc: "highest wins, other files ignored", files: []string{"0.log", "3.log", "1.log", "x.log", "4.log.gz"}, want: 4},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "c")
			for _, f := range tc.files {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := restartCountFromLogDir(dir); got != tc.want {
				t.Errorf("restartCountFromLogDir = %d, want %d", got, tc.want)
			}
		})
	}
}

// versionFlake is a RuntimeServiceClient whose Version fails while down is
// set; ContainerStatus reports the asked-for container running.
type versionFlake struct {
	runtimeapi.RuntimeServiceClient
	mu       sync.Mutex
	down     bool
	versions int
}

func (f *versionFlake) Version(context.Context, *runtimeapi.VersionRequest, ...grpc.CallOption) (*runtimeapi.VersionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.versions++
	if f.down {
		return nil, status.Error(codes.Unavailable, "injected")
	}
	return &runtimeapi.VersionResponse{RuntimeName: "containerd"}, nil
}

func (f *versionFlake) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id: req.GetContainerId(), State: runtimeapi.ContainerState_CONTAINER_RUNNING,
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
	}}, nil
}

// A Version call that fails must not leave a made-up runtime name behind:
// every later status would carry container IDs that match nothing.
func TestRuntimeNameNotGuessedWhenVersionFails(t *testing.T) {
	rt := &versionFlake{down: true}
	m := NewManager(rt, nil, ManagerOptions{})
	ctx := context.Background()
	if _, err := m.GetPodStatusOf(ctx, "uid", "p", "ns", PodObjects{ContainerIDs: []string{"cid"}}); status.Code(errors.Unwrap(err)) != codes.Unavailable {
		t.Fatalf("GetPodStatusOf with Version failing: err = %v, want the Version error", err)
	}
	rt.mu.Lock()
	rt.down = false
	rt.mu.Unlock()
	ps, err := m.GetPodStatusOf(ctx, "uid", "p", "ns", PodObjects{ContainerIDs: []string{"cid"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ps.ContainerStatuses[0].ID.String(), "containerd://cid"; got != want {
		t.Errorf("container ID = %q, want %q", got, want)
	}
	if _, err := m.GetPodStatusOf(ctx, "uid", "p", "ns", PodObjects{ContainerIDs: []string{"cid"}}); err != nil {
		t.Fatal(err)
	}
	if rt.versions != 2 {
		t.Errorf("Version called %d times, want 2 (the failure, then once: the name is kept)", rt.versions)
	}
}
