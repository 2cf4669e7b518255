package status

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func cpu(q string) v1.ResourceRequirements {
	return v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)},
	}
}

// TestResizeIsReportedPendingNotApplied: after a resize of the spec, the
// status keeps reporting what the running instance was created with, and
// says the resize is pending as infeasible, since sync does not resize in
// place; a spec back at the allocation clears it.
func TestResizeIsReportedPendingNotApplied(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app")
	pod.Generation = 3
	pod.Spec.Containers[0].Resources = cpu("200m")
	instance := running("app", "a1", 0, 0)
	allocated := cpu("100m")
	instance.Resources = &allocated
	in := Inputs{Clock: &fixedClock{now: t0}}

	s := GenerateAPIPodStatus(pod, rt(instance), in)
	cs := s.ContainerStatuses[0]
	if got := cs.AllocatedResources.Cpu().String(); got != "100m" {
		t.Errorf("allocatedResources cpu = %s, want the instance's 100m", got)
	}
	if got := cs.Resources.Limits.Cpu().String(); got != "100m" {
		t.Errorf("resources limits cpu = %s, want the instance's 100m", got)
	}
	c := findCondition(s.Conditions, v1.PodResizePending)
	if c == nil || c.Status != v1.ConditionTrue || c.Reason != v1.PodReasonInfeasible || c.ObservedGeneration != 3 ||
		!strings.Contains(c.Message, "[app]") || c.LastTransitionTime.IsZero() {
		t.Fatalf("PodResizePending = %+v, want True/Infeasible naming app, generation 3, with a transition time", c)
	}

	pod.Spec.Containers[0].Resources = cpu("100m")
	in.OldStatus = &s
	s = GenerateAPIPodStatus(pod, rt(instance), in)
	if c := findCondition(s.Conditions, v1.PodResizePending); c != nil {
		t.Errorf("PodResizePending = %+v with the spec back at the allocation, want none", c)
	}
}

// TestInstancesWithoutTheRecordReportTheSpec: an instance created before
// sync recorded resources reports the spec's, and no resize.
func TestInstancesWithoutTheRecordReportTheSpec(t *testing.T) {
	pod := newPod(v1.RestartPolicyAlways, "app")
	pod.Spec.Containers[0].Resources = cpu("200m")
	s := GenerateAPIPodStatus(pod, rt(running("app", "a1", 0, 0)), Inputs{Clock: &fixedClock{now: t0}})
	if got := s.ContainerStatuses[0].AllocatedResources.Cpu().String(); got != "200m" {
		t.Errorf("allocatedResources cpu = %s, want the spec's 200m", got)
	}
	if c := findCondition(s.Conditions, v1.PodResizePending); c != nil {
		t.Errorf("PodResizePending = %+v, want none", c)
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
