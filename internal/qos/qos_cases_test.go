package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rlPairs(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func ctrOf(req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

func TestGetPodQOSCases(t *testing.T) {
	guaranteed := ctrOf(rlPairs("cpu", "1", "memory", "1Gi"), rlPairs("cpu", "1", "memory", "1Gi"))
	bestEffort := ctrOf(nil, nil)
	tests := []struct {
		desc string
		spec v1.PodSpec
		// status, when set, is the recorded class.
		status v1.PodQOSClass
		want   v1.PodQOSClass
	}{
		{desc: "no resources anywhere", spec: v1.PodSpec{Containers: []v1.Container{bestEffort, bestEffort}}, want: v1.PodQOSBestEffort},
		{desc: "only non-QoS resources", spec: v1.PodSpec{Containers: []v1.Container{ctrOf(rlPairs("ephemeral-storage", "1Gi"), rlPairs("ephemeral-storage", "2Gi"))}}, want: v1.PodQOSBestEffort},
		{desc: "explicit zero requests", spec: v1.PodSpec{Containers: []v1.Container{ctrOf(rlPairs("cpu", "0"), nil)}}, want: v1.PodQOSBestEffort},
		{desc: "requests equal limits for cpu and memory", spec: v1.PodSpec{Containers: []v1.Container{guaranteed}}, want: v1.PodQOSGuaranteed},
		{desc: "equal quantities written differently", spec: v1.PodSpec{Containers: []v1.Container{ctrOf(rlPairs("cpu", "1000m", "memory", "1024Mi"), rlPairs("cpu", "1", "memory", "1Gi"))}}, want: v1.PodQOSGuaranteed},
		{desc: "guaranteed with extra extended resource", spec: v1.PodSpec{Containers: []v1.Container{ctrOf(rlPairs("cpu", "1", "memory", "1Gi", "example.com/gpu", "1"), rlPairs("cpu", "1", "memory", "1Gi", "example.com/gpu", "1"))}}, want: v1.PodQOSGuaranteed},
		{desc: "request lower than limit", spec: v1.PodSpec{Containers: []v1.Container{ctrOf(rlPairs("cpu", "500m", "memory", "1Gi"), rlPairs("cpu", "1", "memory", "1Gi"))}}, want: v1.PodQOSBurstable},
		{desc: "partial limits: cpu only", spec: v1.PodSpec{Containers: []v1.Container{ctrOf(rlPairs("cpu", "1"), rlPairs("cpu", "1"))}}, want: v1.PodQOSBurstable},
		{desc: "partial limits: memory only", spec: v1.PodSpec{Containers: []v1.Container{ctrOf(rlPairs("memory", "1Gi"), rlPairs("memory", "1Gi"))}}, want: v1.PodQOSBurstable},
		{desc: "requests only", spec: v1.PodSpec{Containers: []v1.Container{ctrOf(rlPairs("cpu", "1", "memory", "1Gi"), nil)}}, want: v1.PodQOSBurstable},
		{desc: "limits without defaulted requests", spec: v1.PodSpec{Containers: []v1.Container{ctrOf(nil, rlPairs("cpu", "1", "memory", "1Gi"))}}, want: v1.PodQOSBurstable},
		{desc: "one guaranteed, one best-effort container", spec: v1.PodSpec{Containers: []v1.Container{guaranteed, bestEffort}}, want: v1.PodQOSBurstable},
		{desc: "guaranteed containers, best-effort init container", spec: v1.PodSpec{InitContainers: []v1.Container{bestEffort}, Containers: []v1.Container{guaranteed}}, want: v1.PodQOSBurstable},
		{desc: "guaranteed containers and init containers", spec: v1.PodSpec{InitContainers: []v1.Container{guaranteed}, Containers: []v1.Container{guaranteed}}, want: v1.PodQOSGuaranteed},
		{desc: "best-effort containers, burstable init container", spec: v1.PodSpec{InitContainers: []v1.Container{ctrOf(rlPairs("memory", "64Mi"), nil)}, Containers: []v1.Container{bestEffort}}, want: v1.PodQOSBurstable},
		{desc: "ephemeral containers are ignored", spec: v1.PodSpec{Containers: []v1.Container{guaranteed}, EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}}, want: v1.PodQOSGuaranteed},
		{
			desc: "pod-level resources override containers (guaranteed)",
			spec: v1.PodSpec{
				Resources:  &v1.ResourceRequirements{Requests: rlPairs("cpu", "2", "memory", "2Gi"), Limits: rlPairs("cpu", "2", "memory", "2Gi")},
				Containers: []v1.Container{bestEffort},
			},
			want: v1.PodQOSGuaranteed,
		},
		{
			desc: "pod-level resources override containers (burstable)",
			spec: v1.PodSpec{
				Resources:  &v1.ResourceRequirements{Requests: rlPairs("cpu", "1"), Limits: rlPairs("cpu", "2")},
				Containers: []v1.Container{guaranteed},
			},
			want: v1.PodQOSBurstable,
		},
		{desc: "recorded status class wins", spec: v1.PodSpec{Containers: []v1.Container{bestEffort}}, status: v1.PodQOSGuaranteed, want: v1.PodQOSGuaranteed},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			pod := &v1.Pod{Spec: tc.spec, Status: v1.PodStatus{QOSClass: tc.status}}
			if got := GetPodQOS(pod); got != tc.want {
				t.Errorf("GetPodQOS = %s, want %s", got, tc.want)
			}
		})
	}
}
