package eviction

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

func bestEffortPod() *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
}

func burstablePod() *v1.Pod {
	p := bestEffortPod()
	p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
	return p
}

func withAnnotation(p *v1.Pod, k, v string) *v1.Pod {
	p.Annotations = map[string]string{k: v}
	return p
}

func withPriority(p *v1.Pod, prio int32) *v1.Pod {
	p.Spec.Priority = &prio
	return p
}

func withTolerations(p *v1.Pod, tols ...v1.Toleration) *v1.Pod {
	p.Spec.Tolerations = tols
	return p
}

func TestAdmit(t *testing.T) {
	mem, disk, pid := v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure
	memTol := v1.Toleration{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}

	tests := []struct {
		desc        string
		conditions  []v1.NodeConditionType
		pod         *v1.Pod
		wantAdmit   bool
		wantMessage string
	}{
		{desc: "no pressure admits BestEffort", pod: bestEffortPod(), wantAdmit: true},
		{desc: "memory pressure admits Burstable", conditions: []v1.NodeConditionType{mem}, pod: burstablePod(), wantAdmit: true},
		{
			desc: "memory pressure rejects BestEffort", conditions: []v1.NodeConditionType{mem}, pod: bestEffortPod(),
			wantMessage: "The node had condition: [MemoryPressure]. ",
		},
		{
			desc:       "memory pressure admits BestEffort tolerating memory-pressure NoSchedule",
			conditions: []v1.NodeConditionType{mem}, pod: withTolerations(bestEffortPod(), memTol), wantAdmit: true,
		},
		{
			desc:       "memory pressure admits BestEffort with a tolerate-everything toleration",
			conditions: []v1.NodeConditionType{mem},
			pod:        withTolerations(bestEffortPod(), v1.Toleration{Operator: v1.TolerationOpExists}), wantAdmit: true,
		},
		{
			desc:       "memory pressure rejects BestEffort tolerating only NoExecute of the taint",
			conditions: []v1.NodeConditionType{mem},
			pod: withTolerations(bestEffortPod(), v1.Toleration{
				Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}),
			wantMessage: "The node had condition: [MemoryPressure]. ",
		},
		{
			desc:       "memory pressure rejects BestEffort tolerating only disk-pressure",
			conditions: []v1.NodeConditionType{mem},
			pod: withTolerations(bestEffortPod(), v1.Toleration{
				Key: v1.TaintNodeDiskPressure, Operator: v1.TolerationOpExists}),
			wantMessage: "The node had condition: [MemoryPressure]. ",
		},
		{
			desc: "disk pressure rejects Burstable", conditions: []v1.NodeConditionType{disk}, pod: burstablePod(),
			wantMessage: "The node had condition: [DiskPressure]. ",
		},
		{
			desc: "pid pressure rejects Burstable", conditions: []v1.NodeConditionType{pid}, pod: burstablePod(),
			wantMessage: "The node had condition: [PIDPressure]. ",
		},
		{
			desc:        "memory and disk pressure reject Burstable even with the memory toleration",
			conditions:  []v1.NodeConditionType{mem, disk},
			pod:         withTolerations(burstablePod(), memTol),
			wantMessage: "The node had condition: [MemoryPressure DiskPressure]. ",
		},
		{
			desc:       "static pod admitted under disk pressure",
			conditions: []v1.NodeConditionType{disk},
			pod:        withAnnotation(bestEffortPod(), lifecycle.ConfigSourceAnnotationKey, "file"), wantAdmit: true,
		},
		{
			desc:        "api-sourced pod is not static and is rejected",
			conditions:  []v1.NodeConditionType{disk},
			pod:         withAnnotation(bestEffortPod(), lifecycle.ConfigSourceAnnotationKey, "api"),
			wantMessage: "The node had condition: [DiskPressure]. ",
		},
		{
			desc:       "mirror pod admitted under pid pressure",
			conditions: []v1.NodeConditionType{pid},
			pod:        withAnnotation(bestEffortPod(), lifecycle.ConfigMirrorAnnotationKey, "abc"), wantAdmit: true,
		},
		{
			desc:       "system-cluster-critical priority admitted under disk pressure",
			conditions: []v1.NodeConditionType{disk},
			pod:        withPriority(bestEffortPod(), 2000000000), wantAdmit: true,
		},
		{
			desc:        "priority just below critical is rejected",
			conditions:  []v1.NodeConditionType{disk},
			pod:         withPriority(bestEffortPod(), 1999999999),
			wantMessage: "The node had condition: [DiskPressure]. ",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			src := &StaticPressure{}
			src.Set(tc.conditions...)
			got := NewAdmitHandler(src).Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: tc.pod})
			if got.Admit != tc.wantAdmit {
				t.Fatalf("Admit = %v, want %v (result %+v)", got.Admit, tc.wantAdmit, got)
			}
			if tc.wantAdmit {
				if got.Reason != "" || got.Message != "" {
					t.Errorf("admitted result carries reason %q message %q", got.Reason, got.Message)
				}
				return
			}
			if got.Reason != "Evicted" {
				t.Errorf("Reason = %q, want Evicted", got.Reason)
			}
			if got.Message != tc.wantMessage {
				t.Errorf("Message = %q, want %q", got.Message, tc.wantMessage)
			}
		})
	}
}

func TestStaticPressureCopies(t *testing.T) {
	src := &StaticPressure{}
	in := []v1.NodeConditionType{v1.NodeDiskPressure}
	src.Set(in...)
	in[0] = v1.NodeMemoryPressure
	out := src.NodeConditions(context.Background())
	if len(out) != 1 || out[0] != v1.NodeDiskPressure {
		t.Fatalf("NodeConditions() = %v, want [DiskPressure] unaffected by the caller's slice", out)
	}
	out[0] = v1.NodePIDPressure
	if again := src.NodeConditions(context.Background()); again[0] != v1.NodeDiskPressure {
		t.Fatalf("NodeConditions() = %v after mutating a returned slice", again)
	}
}
