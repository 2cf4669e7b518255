package container

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A pod wants recursive read-only mounts when a mount of any of its
// containers, init and ephemeral ones included, asks for Enabled or
// IfPossible; Disabled and unset do not count.
func TestPodWantsRecursiveReadOnly(t *testing.T) {
	mode := func(m v1.RecursiveReadOnlyMode) *v1.RecursiveReadOnlyMode { return &m }
	asking := []v1.VolumeMount{{Name: "a", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyIfPossible)}}
	plain := []v1.VolumeMount{{Name: "p", ReadOnly: true}, {Name: "d", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyDisabled)}}
	for _, tc := range []struct {
		desc string
		spec v1.PodSpec
		want bool
	}{
		{desc: "no mount asks", spec: v1.PodSpec{Containers: []v1.Container{{VolumeMounts: plain}}}},
		{desc: "a container", spec: v1.PodSpec{Containers: []v1.Container{{VolumeMounts: plain}, {VolumeMounts: asking}}}, want: true},
		{desc: "an init container", spec: v1.PodSpec{InitContainers: []v1.Container{{VolumeMounts: asking}}}, want: true},
		{desc: "an ephemeral container", spec: v1.PodSpec{EphemeralContainers: []v1.EphemeralContainer{
			{EphemeralContainerCommon: v1.EphemeralContainerCommon{VolumeMounts: asking}}}}, want: true},
	} {
		if got := PodWantsRecursiveReadOnly(&v1.Pod{Spec: tc.spec}); got != tc.want {
			t.Errorf("%s: got %t, want %t", tc.desc, got, tc.want)
		}
	}
}
