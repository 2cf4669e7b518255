package kuberuntime

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

func limits(cpu, mem string) v1.ResourceRequirements {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return v1.ResourceRequirements{Limits: l, Requests: l.DeepCopy()}
}

var (
	cpuRestart     = v1.ContainerResizePolicy{ResourceName: v1.ResourceCPU, RestartPolicy: v1.RestartContainer}
	cpuNoRestart   = v1.ContainerResizePolicy{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired}
	memRestart     = v1.ContainerResizePolicy{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}
	memNoRestart   = v1.ContainerResizePolicy{ResourceName: v1.ResourceMemory, RestartPolicy: v1.NotRequired}
	resizeRestarts = "Container foo1 resize requires restart"
)

// TestComputePodActionsForPodResize ports the container rows of the
// kubelet's TestComputePodActionsForPodResize: the first container's
// allocation (spec) against what its running instance was set to.
func TestComputePodActionsForPodResize(t *testing.T) {
	for _, tc := range []struct {
		desc     string
		policy   []v1.ContainerResizePolicy
		spec     v1.ResourceRequirements
		actuated *v1.ResourceRequirements
		state    container.State
		// wantUpdate lists the resources foo1 is updated in place for.
		wantUpdate []v1.ResourceName
		wantKill   bool
	}{
		{desc: "update container CPU and memory resources", spec: limits("100m", "100M"), actuated: ptr(limits("200m", "200M")),
			wantUpdate: []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU}},
		{desc: "update container CPU resources", spec: limits("100m", "100M"), actuated: ptr(limits("200m", "100M")),
			wantUpdate: []v1.ResourceName{v1.ResourceCPU}},
		{desc: "update container memory resources", spec: limits("200m", "200M"), actuated: ptr(limits("200m", "100M")),
			wantUpdate: []v1.ResourceName{v1.ResourceMemory}},
		{desc: "nothing when spec and actuated resources are equal", spec: limits("200m", ""), actuated: ptr(limits("200m", ""))},
		{desc: "nothing when spec and actuated resources are equal (besteffort)", actuated: &v1.ResourceRequirements{}},
		{desc: "equal quantities written differently", spec: limits("1", "1Gi"), actuated: ptr(limits("1000m", "1073741824"))},
		{desc: "update container CPU and memory resources with Restart policy for CPU", policy: []v1.ContainerResizePolicy{cpuRestart, memNoRestart},
			spec: limits("200m", "200M"), actuated: ptr(limits("100m", "100M")), wantKill: true},
		{desc: "update container CPU and memory resources with Restart policy for memory", policy: []v1.ContainerResizePolicy{cpuNoRestart, memRestart},
			spec: limits("200m", "200M"), actuated: ptr(limits("100m", "100M")), wantKill: true},
		{desc: "update container memory resources with Restart policy for CPU", policy: []v1.ContainerResizePolicy{cpuRestart, memNoRestart},
			spec: limits("100m", "200M"), actuated: ptr(limits("100m", "100M")), wantUpdate: []v1.ResourceName{v1.ResourceMemory}},
		{desc: "update container CPU resources with Restart policy for memory", policy: []v1.ContainerResizePolicy{cpuNoRestart, memRestart},
			spec: limits("200m", "100M"), actuated: ptr(limits("100m", "100M")), wantUpdate: []v1.ResourceName{v1.ResourceCPU}},
		{desc: "an instance without a record is updated to its allocation", spec: limits("100m", ""),
			wantUpdate: []v1.ResourceName{v1.ResourceCPU}},
		{desc: "adding a limit to requests only", spec: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("25m")}, Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("35m")}},
			actuated:   &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("20m")}},
			wantUpdate: []v1.ResourceName{v1.ResourceCPU}},
		{desc: "a container not running waits for its restart", spec: limits("200m", ""), actuated: ptr(limits("100m", "")),
			state: container.ContainerStateCreated},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			pod.Spec.Containers[0].Resources = tc.spec
			pod.Spec.Containers[0].ResizePolicy = tc.policy
			ps := makeTestPodStatus(pod)
			st := ps.FindContainerStatusByName("foo1")
			st.Resources = tc.actuated
			if tc.state != "" {
				st.State = tc.state
			}
			changes := PodActions{ContainersToKill: map[container.ContainerID]ContainerToKillInfo{}}
			keep := computePodResizeAction(pod, 0, false, st, &changes)

			if keep == tc.wantKill {
				t.Errorf("keep = %t, want %t", keep, !tc.wantKill)
			}
			if tc.wantKill {
				if info, ok := changes.ContainersToKill[st.ID]; !ok || info.Message != resizeRestarts {
					t.Errorf("ContainersToKill = %+v, want foo1 with %q", changes.ContainersToKill, resizeRestarts)
				}
				if len(changes.ContainersToStart) != 1 || changes.ContainersToStart[0] != 0 || !changes.UpdatePodResources {
					t.Errorf("ContainersToStart = %v, UpdatePodResources = %t, want [0] and true", changes.ContainersToStart, changes.UpdatePodResources)
				}
				if len(changes.ContainersToUpdate) != 0 {
					t.Errorf("ContainersToUpdate = %v, want none with a restart", changes.ContainersToUpdate)
				}
				return
			}
			if len(changes.ContainersToKill) != 0 || len(changes.ContainersToStart) != 0 {
				t.Errorf("kill %v, start %v; want neither", changes.ContainersToKill, changes.ContainersToStart)
			}
			if len(changes.ContainersToUpdate) != len(tc.wantUpdate) {
				t.Fatalf("ContainersToUpdate = %v, want %v", changes.ContainersToUpdate, tc.wantUpdate)
			}
			for _, name := range tc.wantUpdate {
				infos := changes.ContainersToUpdate[name]
				if len(infos) != 1 || infos[0].ContainerID != st.ID || infos[0].Desired != containerResourcesFromRequirements(&tc.spec) {
					t.Errorf("ContainersToUpdate[%s] = %+v, want foo1 to its allocation", name, infos)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestPodResizeDecreasesGoFirst: within one resource, containers that
// shrink are updated before those that grow, so that the pod never holds
// more than its target on the way (the kubelet's markContainerForUpdate).
func TestPodResizeDecreasesGoFirst(t *testing.T) {
	pod := makeTestPod()
	pod.Spec.Containers[0].Resources = limits("300m", "")
	pod.Spec.Containers[1].Resources = limits("100m", "")
	pod.Spec.Containers[2].Resources = limits("200m", "")
	ps := makeTestPodStatus(pod)
	for _, st := range ps.ContainerStatuses {
		st.Resources = ptr(limits("200m", ""))
	}
	actions := computePodActions(context.Background(), pod, ps, nil, false)
	got := actions.ContainersToUpdate[v1.ResourceCPU]
	if len(got) != 2 || got[0].Container.Name != "foo2" || got[1].Container.Name != "foo1" {
		t.Fatalf("cpu updates = %v, want foo2 (down) then foo1 (up)", actions)
	}
	if len(actions.ContainersToKill) != 0 || len(actions.ContainersToStart) != 0 || actions.KillPod {
		t.Errorf("actions = %v, want only updates", actions)
	}
}

// TestSyncPodResizesInPlace: SyncPod sends the allocation of a container
// that runs with other resources to the runtime (UpdateContainerResources)
// and records it, so that the next status shows it applied and the next
// sync does nothing.
func TestSyncPodResizesInPlace(t *testing.T) {
	ctx := context.Background()
	pod := makeTestPod()
	pod.Spec.Containers = pod.Spec.Containers[:1]
	pod.Spec.Containers[0].Resources = limits("200m", "256Mi")
	ps := makeTestPodStatus(pod)
	ps.ContainerStatuses[0].Resources = ptr(limits("100m", "128Mi"))

	fake := &updateRecorder{}
	dir := t.TempDir()
	m := NewManager(fake, nil, ManagerOptions{
		Sandbox:   SandboxOptions{PodLogsRoot: dir},
		Container: ContainerOptions{PodLogsRoot: dir},
	})
	res, err := m.SyncPod(ctx, pod, ps, nil, false)
	if err != nil {
		t.Fatalf("SyncPod: %v", err)
	}
	if !res.Acted {
		t.Errorf("SyncPod did not say it acted")
	}
	if len(fake.updates) != 2 {
		t.Fatalf("UpdateContainerResources calls = %d, want 2 (memory, then cpu)", len(fake.updates))
	}
	mem, cpu := fake.updates[0].GetLinux(), fake.updates[1].GetLinux()
	if mem.GetMemoryLimitInBytes() != 256<<20 || mem.GetCpuQuota() != 10000 {
		t.Errorf("memory step = %+v, want 256Mi with the current 100m quota", mem)
	}
	if cpu.GetMemoryLimitInBytes() != 256<<20 || cpu.GetCpuQuota() != 20000 || cpu.GetCpuShares() != 204 {
		t.Errorf("cpu step = %+v, want 256Mi, quota 20000, 204 shares", cpu)
	}
	got, ok := m.opts.Actuated.ActuatedResources(pod.UID, cid("foo1").ID)
	if !ok || !container.SameResources(&got, &pod.Spec.Containers[0].Resources) {
		t.Fatalf("actuated record = %+v (%t), want the allocation", got, ok)
	}

	st := m.withActuated(pod.UID, running("foo1"))
	ps.ContainerStatuses[0] = st
	if actions := computePodActions(ctx, pod, ps, nil, false); len(actions.ContainersToUpdate) != 0 {
		t.Errorf("after the resize: %v, want nothing to update", actions)
	}
}

// updateRecorder is a runtime that records UpdateContainerResources and
// reports usage as every container's memory use; any other call panics
// (embedded nil interface).
type updateRecorder struct {
	runtimeapi.RuntimeServiceClient
	updates []*runtimeapi.UpdateContainerResourcesRequest
	usage   uint64
}

func (f *updateRecorder) ContainerStats(_ context.Context, req *runtimeapi.ContainerStatsRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatsResponse, error) {
	return &runtimeapi.ContainerStatsResponse{Stats: &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Id: req.GetContainerId()},
		Memory:     &runtimeapi.MemoryUsage{UsageBytes: &runtimeapi.UInt64Value{Value: f.usage}},
	}}, nil
}

func (f *updateRecorder) UpdateContainerResources(_ context.Context, req *runtimeapi.UpdateContainerResourcesRequest, _ ...grpc.CallOption) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	f.updates = append(f.updates, req)
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// TestPodResizeMemoryLimitBelowUsage: a memory limit lowered to no more
// than the container uses is refused before anything is updated, with the
// kubelet's message (the e2e spec "decrease memory limit below usage");
// one above the usage goes through.
func TestPodResizeMemoryLimitBelowUsage(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		desc    string
		usage   uint64
		wantErr string
	}{
		{desc: "below usage", usage: 100 << 20,
			wantErr: `cannot decrease memory limits: attempting to set container "foo1" memory limit (67108864) below current usage (104857600)`},
		{desc: "above usage", usage: 10 << 20},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := makeTestPod()
			pod.Spec.Containers = pod.Spec.Containers[:1]
			pod.Spec.Containers[0].Resources = limits("", "64Mi")
			ps := makeTestPodStatus(pod)
			ps.ContainerStatuses[0].Resources = ptr(limits("", "128Mi"))
			fake := &updateRecorder{usage: tc.usage}
			dir := t.TempDir()
			m := NewManager(fake, nil, ManagerOptions{
				Sandbox:   SandboxOptions{PodLogsRoot: dir},
				Container: ContainerOptions{PodLogsRoot: dir, MachineMemoryCapacity: 8 << 30},
			})
			res, err := m.SyncPod(ctx, pod, ps, nil, false)
			if tc.wantErr == "" {
				if err != nil || len(fake.updates) != 1 {
					t.Fatalf("SyncPod = %v with %d updates, want one update", err, len(fake.updates))
				}
				return
			}
			if res.ResizeErr == nil || res.ResizeErr.Error() != tc.wantErr || err == nil {
				t.Fatalf("ResizeErr = %v (err %v), want %q", res.ResizeErr, err, tc.wantErr)
			}
			if len(fake.updates) != 0 {
				t.Errorf("%d updates sent, want none", len(fake.updates))
			}
		})
	}
}

// TestSidecarResizePastRegularContainers: a running sidecar whose index
// among the init containers is past the end of the regular containers is
// resized like any other. (Sync panicked on this pod shape when the
// sidecar was looked up among the regular containers: the full
// conformance run of 2026-12-05 lost its node to it.)
func TestSidecarResizePastRegularContainers(t *testing.T) {
	pod := makeTestPod()
	pod.Spec.Containers = pod.Spec.Containers[:1]
	side := sidecar("side")
	side.Resources = limits("200m", "")
	pod.Spec.InitContainers = []v1.Container{initContainer("init1"), initContainer("init2"), side}
	ps := makeTestPodStatus(pod)
	for _, c := range pod.Spec.InitContainers[:2] {
		ps.ContainerStatuses = append(ps.ContainerStatuses, exited(c.Name, 0))
	}
	st := running("side")
	st.Resources = ptr(limits("100m", ""))
	ps.ContainerStatuses = append(ps.ContainerStatuses, st)

	actions := computePodActions(context.Background(), pod, ps, nil, false)
	got := actions.ContainersToUpdate[v1.ResourceCPU]
	if len(got) != 1 || got[0].Container.Name != "side" || got[0].ContainerID != st.ID {
		t.Fatalf("cpu updates = %+v, want the sidecar to its allocation", got)
	}
	if len(actions.ContainersToKill) != 0 || len(actions.InitContainersToStart) != 0 || actions.KillPod {
		t.Errorf("actions = %v, want only the sidecar's update", actions)
	}
}
