package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/cm"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/events"
)

// journal is the order of pod cgroup and container updates in a sync.
type journal struct{ steps []string }

// podCgroupRecorder is a PodCgroups over cm.ResourceConfigForPod that
// starts from current and writes its steps to a journal.
type podCgroupRecorder struct {
	j         *journal
	current   cm.ResourceConfig
	ensureErr error
}

func (r *podCgroupRecorder) EnsureExists(*v1.Pod) error {
	r.j.steps = append(r.j.steps, "ensure pod cgroup")
	return r.ensureErr
}

func (r *podCgroupRecorder) ResourceConfig(pod *v1.Pod) cm.ResourceConfig {
	return cm.ResourceConfigForPod(pod, true, cm.QuotaPeriod)
}

func (r *podCgroupRecorder) Current(*v1.Pod) (cm.ResourceConfig, error) { return r.current, nil }

func (r *podCgroupRecorder) Set(_ *v1.Pod, cfg cm.ResourceConfig) error {
	var parts []string
	if cfg.Memory != nil {
		parts = append(parts, fmt.Sprintf("memory=%d", *cfg.Memory))
	}
	if cfg.CPUQuota != nil {
		parts = append(parts, fmt.Sprintf("quota=%d", *cfg.CPUQuota))
	}
	if cfg.CPUShares != nil {
		parts = append(parts, fmt.Sprintf("shares=%d", *cfg.CPUShares))
	}
	r.j.steps = append(r.j.steps, "pod "+strings.Join(parts, ","))
	return nil
}

// journaledRuntime records UpdateContainerResources in the journal.
type journaledRuntime struct {
	updateRecorder
	j *journal
}

func (f *journaledRuntime) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest, opts ...grpc.CallOption) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	l := req.GetLinux()
	f.j.steps = append(f.j.steps, fmt.Sprintf("container memory=%d,quota=%d", l.GetMemoryLimitInBytes(), l.GetCpuQuota()))
	return f.updateRecorder.UpdateContainerResources(ctx, req, opts...)
}

// A resize moves the pod cgroup's limit before the containers' when it
// grows and after them when it shrinks, memory first, then CPU (the
// kubelet's doPodResizeAction with resizeContainers), so that no container
// is ever allowed more than its pod.
func TestResizeOrdersPodCgroup(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	for _, tc := range []struct {
		desc            string
		current, wanted v1.ResourceRequirements
		want            []string
	}{
		{
			desc: "both up: the pod first", current: limits("100m", "128Mi"), wanted: limits("200m", "256Mi"),
			want: []string{
				"pod memory=268435456", "container memory=268435456,quota=10000",
				"pod quota=20000", "pod shares=204", "container memory=268435456,quota=20000",
			},
		},
		{
			desc: "both down: the containers first", current: limits("200m", "256Mi"), wanted: limits("100m", "128Mi"),
			want: []string{
				"container memory=134217728,quota=20000", "pod memory=134217728",
				"container memory=134217728,quota=10000", "pod shares=102", "pod quota=10000",
			},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			pod.Spec.Containers = pod.Spec.Containers[:1]
			pod.Spec.Containers[0].Resources = tc.wanted
			ps := makeTestPodStatus(pod)
			ps.ContainerStatuses[0].Resources = ptr(tc.current)
			before := pod.DeepCopy()
			before.Spec.Containers[0].Resources = tc.current
			cur := cm.ResourceConfigForPod(before, true, cm.QuotaPeriod)
			j := &journal{}
			pcg := &podCgroupRecorder{j: j, current: cm.ResourceConfig{
				Memory: i64(*cur.Memory), CPUQuota: i64(*cur.CPUQuota), CPUPeriod: u64(*cur.CPUPeriod), CPUShares: u64(*cur.CPUShares)}}
			dir := t.TempDir()
			m := NewManager(&journaledRuntime{j: j, updateRecorder: updateRecorder{usage: 1 << 20}}, nil, ManagerOptions{
				Sandbox:    SandboxOptions{PodLogsRoot: dir},
				Container:  ContainerOptions{PodLogsRoot: dir, MachineMemoryCapacity: 8 << 30},
				PodCgroups: pcg,
			})
			if _, err := m.SyncPod(context.Background(), pod, ps, nil, false); err != nil {
				t.Fatalf("SyncPod: %v", err)
			}
			if !slices.Equal(j.steps, tc.want) {
				t.Fatalf("steps:\n  %s\nwant:\n  %s", strings.Join(j.steps, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// A new pod's cgroup is ensured before its sandbox; when it cannot be, the
// pod gets the kubelet's FailedCreatePodContainer event and no sandbox.
func TestSandboxWaitsForPodCgroup(t *testing.T) {
	pod := makeTestPod()
	rec := &events.FakeRecorder{}
	j := &journal{}
	pcg := &podCgroupRecorder{j: j, ensureErr: errors.New("read-only file system")}
	dir := t.TempDir()
	m := NewManager(&updateRecorder{}, nil, ManagerOptions{
		Sandbox:    SandboxOptions{PodLogsRoot: dir},
		Container:  ContainerOptions{PodLogsRoot: dir, PodVolumesRoot: dir, PodContainersRoot: dir},
		Recorder:   rec,
		PodCgroups: pcg,
	})
	_, err := m.SyncPod(context.Background(), pod, &container.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}, nil, false)
	if err == nil || !strings.Contains(err.Error(), "cgroups exist and are correctly applied: read-only file system") {
		t.Fatalf("SyncPod = %v, want the pod cgroup's error", err)
	}
	if !slices.Equal(j.steps, []string{"ensure pod cgroup"}) {
		t.Errorf("steps %v, want the pod cgroup alone (a RunPodSandbox would have panicked)", j.steps)
	}
	if evs := rec.Events(); len(evs) != 1 || !strings.Contains(evs[0], "FailedCreatePodContainer unable to ensure pod container exists: read-only file system") {
		t.Errorf("events %q, want FailedCreatePodContainer", evs)
	}
}
