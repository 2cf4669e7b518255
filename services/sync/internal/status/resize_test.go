package status

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

func cpu(q string) v1.ResourceRequirements {
	return v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)},
	}
}

func req(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func qty(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// TestResizeInProgressUntilActuated: once the node granted a resize (pod
// is the allocated pod), the status reports the new allocation as
// allocatedResources, what the runtime runs as resources, and
// PodResizeInProgress until the instance's actuated resources match.
func TestResizeInProgressUntilActuated(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app")
	pod.Generation = 3
	pod.Spec.Containers[0].Resources = cpu("200m")
	instance := running("app", "a1", 0, 0)
	actuated := cpu("100m")
	instance.Resources = &actuated
	instance.ActualResources = &container.ContainerResources{CPURequest: qty("100m"), CPULimit: qty("100m")}
	in := Inputs{Clock: &fixedClock{now: t0}}

	s := GenerateAPIPodStatus(pod, rt(instance), in)
	cs := s.ContainerStatuses[0]
	if got := cs.AllocatedResources.Cpu().String(); got != "200m" {
		t.Errorf("allocatedResources cpu = %s, want the allocation's 200m", got)
	}
	if got := cs.Resources.Limits.Cpu().String(); got != "100m" {
		t.Errorf("resources limits cpu = %s, want the runtime's 100m", got)
	}
	c := findCondition(s.Conditions, v1.PodResizeInProgress)
	if c == nil || c.Status != v1.ConditionTrue || c.Reason != "" || c.ObservedGeneration != 3 || c.LastTransitionTime.IsZero() {
		t.Fatalf("PodResizeInProgress = %+v, want True, generation 3, with a transition time", c)
	}
	if c := findCondition(s.Conditions, v1.PodResizePending); c != nil {
		t.Errorf("PodResizePending = %+v, want none", c)
	}

	in.ResizeError = "boom"
	s = GenerateAPIPodStatus(pod, rt(instance), in)
	if c := findCondition(s.Conditions, v1.PodResizeInProgress); c == nil || c.Reason != v1.PodReasonError || c.Message != "boom" {
		t.Errorf("PodResizeInProgress after a failure = %+v, want reason Error, message boom", c)
	}

	in.ResizeError = ""
	applied := cpu("200m")
	instance.Resources = &applied
	instance.ActualResources = &container.ContainerResources{CPURequest: qty("200m"), CPULimit: qty("200m")}
	in.OldStatus = &s
	s = GenerateAPIPodStatus(pod, rt(instance), in)
	if c := findCondition(s.Conditions, v1.PodResizeInProgress); c != nil {
		t.Errorf("PodResizeInProgress = %+v once actuated, want none", c)
	}
	if got := s.ContainerStatuses[0].Resources.Requests.Cpu().String(); got != "200m" {
		t.Errorf("resources requests cpu = %s, want 200m", got)
	}
}

// TestResizePendingComesFromTheAllocation: a resize the node has not
// granted shows as the allocation manager's PodResizePending condition,
// with a transition time; the status keeps reporting the allocation.
func TestResizePendingComesFromTheAllocation(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].Resources = cpu("100m")
	instance := running("app", "a1", 0, 0)
	allocated := cpu("100m")
	instance.Resources = &allocated
	pending := v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: v1.PodReasonDeferred,
		Message: "Node didn't have enough resource: cpu", ObservedGeneration: 4}
	s := GenerateAPIPodStatus(pod, rt(instance), Inputs{Clock: &fixedClock{now: t0}, ResizePending: &pending})
	c := findCondition(s.Conditions, v1.PodResizePending)
	if c == nil || c.Reason != v1.PodReasonDeferred || !strings.Contains(c.Message, "cpu") || c.ObservedGeneration != 4 || c.LastTransitionTime.IsZero() {
		t.Fatalf("PodResizePending = %+v, want the allocation's Deferred condition with a transition time", c)
	}
	if c := findCondition(s.Conditions, v1.PodResizeInProgress); c != nil {
		t.Errorf("PodResizeInProgress = %+v, want none", c)
	}
}

// TestInstancesWithoutTheRecordAreResized: an instance that carries no
// record of its resources (created before sync recorded them) reports the
// allocation and is taken as not yet resized to it, as the kubelet takes a
// container without an actuated record.
func TestInstancesWithoutTheRecordAreResized(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].Resources = cpu("200m")
	s := GenerateAPIPodStatus(pod, rt(running("app", "a1", 0, 0)), Inputs{Clock: &fixedClock{now: t0}})
	if got := s.ContainerStatuses[0].AllocatedResources.Cpu().String(); got != "200m" {
		t.Errorf("allocatedResources cpu = %s, want the spec's 200m", got)
	}
	if got := s.ContainerStatuses[0].Resources.Limits.Cpu().String(); got != "200m" {
		t.Errorf("resources limits cpu = %s, want the spec's 200m", got)
	}
	if c := findCondition(s.Conditions, v1.PodResizeInProgress); c == nil {
		t.Errorf("PodResizeInProgress missing")
	}
}

// TestConvertContainerStatusResources ports rows of the kubelet's
// TestConvertToAPIContainerStatusesForResources.
func TestConvertContainerStatusResources(t *testing.T) {
	for _, tc := range []struct {
		desc      string
		state     container.State
		allocated v1.ResourceRequirements
		actual    *container.ContainerResources
		old       *v1.ResourceRequirements // previous status of the same running instance
		want      v1.ResourceRequirements
	}{{
		desc:      "guaranteed, runtime reports the allocation",
		allocated: v1.ResourceRequirements{Requests: req("1", "1Gi"), Limits: req("1", "1Gi")},
		actual:    &container.ContainerResources{CPURequest: qty("1"), CPULimit: qty("1"), MemoryRequest: qty("1Gi"), MemoryLimit: qty("1Gi")},
		want:      v1.ResourceRequirements{Requests: req("1", "1Gi"), Limits: req("1", "1Gi")},
	}, {
		desc:      "burstable, runtime runs an older size",
		allocated: v1.ResourceRequirements{Requests: req("1", "1Gi"), Limits: req("2", "2Gi")},
		actual:    &container.ContainerResources{CPURequest: qty("500m"), CPULimit: qty("1"), MemoryRequest: qty("1Gi"), MemoryLimit: qty("1Gi")},
		want:      v1.ResourceRequirements{Requests: req("500m", "1Gi"), Limits: req("1", "1Gi")},
	}, {
		desc:      "burstable without CPU: minimum shares are not reported",
		allocated: v1.ResourceRequirements{Requests: req("", "100M")},
		actual:    &container.ContainerResources{CPURequest: qty("2m"), MemoryRequest: qty("100M")},
		want:      v1.ResourceRequirements{Requests: req("", "100M")},
	}, {
		desc:      "below the minimum CPU: the allocation stands (1m is 2 shares, 5m a 1ms quota)",
		allocated: v1.ResourceRequirements{Requests: req("1m", "100M"), Limits: req("5m", "")},
		actual:    &container.ContainerResources{CPURequest: qty("2m"), CPULimit: qty("10m"), MemoryRequest: qty("100M")},
		want:      v1.ResourceRequirements{Requests: req("1m", "100M"), Limits: req("5m", "")},
	}, {
		desc:      "runtime reports nothing: the previous status of the same instance stands",
		allocated: v1.ResourceRequirements{Requests: req("200m", "200Mi"), Limits: req("200m", "200Mi")},
		old:       &v1.ResourceRequirements{Requests: req("100m", "100Mi"), Limits: req("100m", "100Mi")},
		want:      v1.ResourceRequirements{Requests: req("100m", "100Mi"), Limits: req("100m", "100Mi")},
	}, {
		desc:      "not running: the allocation",
		state:     container.ContainerStateExited,
		allocated: v1.ResourceRequirements{Requests: req("200m", ""), Limits: req("200m", "")},
		actual:    &container.ContainerResources{CPURequest: qty("100m"), CPULimit: qty("100m")},
		want:      v1.ResourceRequirements{Requests: req("200m", ""), Limits: req("200m", "")},
	}} {
		t.Run(tc.desc, func(t *testing.T) {
			cs := running("app", "a1", 0, 0)
			if tc.state != "" {
				cs.State = tc.state
			}
			cs.ActualResources = tc.actual
			spec := &v1.Container{Name: "app", Resources: tc.allocated}
			status := &v1.ContainerStatus{Name: "app", ContainerID: cs.ID.String()}
			old := map[string]v1.ContainerStatus{}
			if tc.old != nil {
				old["app"] = v1.ContainerStatus{Name: "app", ContainerID: cs.ID.String(),
					State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}, Resources: tc.old}
			}
			got := convertContainerStatusResources(spec, status, cs, old)
			if !equality.Semantic.DeepEqual(*got, tc.want) {
				t.Errorf("resources = %+v, want %+v", *got, tc.want)
			}
		})
	}
}

// The runtime's word on the process's identity is the status's user.
func TestContainerUserIsTheRuntimes(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app")
	instance := running("app", "a1", 0, 0)
	instance.User = &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000}}}
	s := GenerateAPIPodStatus(pod, rt(instance), Inputs{Clock: &fixedClock{now: t0}})
	u := s.ContainerStatuses[0].User
	if u == nil || u.Linux == nil || u.Linux.UID != 1000 || u.Linux.GID != 3000 || len(u.Linux.SupplementalGroups) != 2 {
		t.Errorf("user = %+v, want uid 1000, gid 3000, groups [3000 4000]", u)
	}
}
