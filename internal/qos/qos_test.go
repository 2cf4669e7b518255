package qos

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(cpu, mem string) v1.ResourceList {
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		l[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return l
}

func ctr(req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

func TestComputePodQOS(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	sidecar := ctr(nil, nil)
	sidecar.RestartPolicy = &always

	tests := []struct {
		desc string
		pod  v1.Pod
		want v1.PodQOSClass
	}{
		{
			desc: "no resources anywhere is BestEffort",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr(nil, nil)}}},
			want: v1.PodQOSBestEffort,
		},
		{
			desc: "only ephemeral-storage set is still BestEffort",
			pod: v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr(
				v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}, nil)}}},
			want: v1.PodQOSBestEffort,
		},
		{
			desc: "cpu and memory requests equal limits is Guaranteed",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr(rl("1", "1Gi"), rl("1", "1Gi"))}}},
			want: v1.PodQOSGuaranteed,
		},
		{
			desc: "equal quantities written differently are still Guaranteed",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr(rl("1000m", "1024Mi"), rl("1", "1Gi"))}}},
			want: v1.PodQOSGuaranteed,
		},
		{
			desc: "request below limit is Burstable",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr(rl("500m", "1Gi"), rl("1", "1Gi"))}}},
			want: v1.PodQOSBurstable,
		},
		{
			desc: "cpu pinned but no memory is Burstable",
			pod:  v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr(rl("1", ""), rl("1", ""))}}},
			want: v1.PodQOSBurstable,
		},
		{
			desc: "a Guaranteed container beside a BestEffort one is Burstable",
			pod: v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{
				ctr(rl("1", "1Gi"), rl("1", "1Gi")), ctr(nil, nil)}}},
			want: v1.PodQOSBurstable,
		},
		{
			desc: "a BestEffort sidecar makes a Guaranteed pod Burstable",
			pod: v1.Pod{Spec: v1.PodSpec{
				InitContainers: []v1.Container{sidecar},
				Containers:     []v1.Container{ctr(rl("1", "1Gi"), rl("1", "1Gi"))}}},
			want: v1.PodQOSBurstable,
		},
		{
			desc: "Guaranteed init and regular containers stay Guaranteed",
			pod: v1.Pod{Spec: v1.PodSpec{
				InitContainers: []v1.Container{ctr(rl("2", "2Gi"), rl("2", "2Gi"))},
				Containers:     []v1.Container{ctr(rl("1", "1Gi"), rl("1", "1Gi"))}}},
			want: v1.PodQOSGuaranteed,
		},
		{
			desc: "pod-level resources decide over container resources",
			pod: v1.Pod{Spec: v1.PodSpec{
				Resources:  &v1.ResourceRequirements{Requests: rl("2", "2Gi"), Limits: rl("2", "2Gi")},
				Containers: []v1.Container{ctr(nil, nil)}}},
			want: v1.PodQOSGuaranteed,
		},
		{
			desc: "pod-level limit only (not defaulted) is Burstable",
			pod: v1.Pod{Spec: v1.PodSpec{
				Resources:  &v1.ResourceRequirements{Limits: rl("2", "2Gi")},
				Containers: []v1.Container{ctr(rl("1", "1Gi"), rl("1", "1Gi"))}}},
			want: v1.PodQOSBurstable,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := ComputePodQOS(&tc.pod); got != tc.want {
				t.Errorf("ComputePodQOS() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestGetPodQOSPrefersStatus(t *testing.T) {
	tests := []struct {
		desc   string
		status v1.PodQOSClass
		want   v1.PodQOSClass
	}{
		{desc: "status set wins over spec", status: v1.PodQOSGuaranteed, want: v1.PodQOSGuaranteed},
		{desc: "status empty computes from spec", status: "", want: v1.PodQOSBestEffort},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			pod := &v1.Pod{
				Spec:   v1.PodSpec{Containers: []v1.Container{ctr(nil, nil)}},
				Status: v1.PodStatus{QOSClass: tc.status},
			}
			if got := GetPodQOS(pod); got != tc.want {
				t.Errorf("GetPodQOS() = %s, want %s", got, tc.want)
			}
		})
	}
}
