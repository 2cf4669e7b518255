package status

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The recursiveReadOnly of each read-only mount in the status: IfPossible
// follows the runtime handler's support, Enabled reads Enabled only with
// it (without, the container cannot start), Disabled and unset read
// Disabled; a writable mount has none. The support is asked once per
// status, and not at all for a pod with no mount asking for it.
func TestVolumeMountStatusesRecursiveReadOnly(t *testing.T) {
	mode := func(m v1.RecursiveReadOnlyMode) *v1.RecursiveReadOnlyMode { return &m }
	mounts := []v1.VolumeMount{
		{Name: "plain", MountPath: "/plain", ReadOnly: true},
		{Name: "disabled", MountPath: "/disabled", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyDisabled)},
		{Name: "if-possible", MountPath: "/if-possible", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyIfPossible)},
		{Name: "enabled", MountPath: "/enabled", ReadOnly: true, RecursiveReadOnly: mode(v1.RecursiveReadOnlyEnabled)},
		{Name: "rw", MountPath: "/rw"},
	}
	for _, tc := range []struct {
		supported bool
		want      string
	}{
		{false, "plain=Disabled disabled=Disabled if-possible=Disabled enabled=Disabled rw=-"},
		{true, "plain=Disabled disabled=Disabled if-possible=Enabled enabled=Enabled rw=-"},
	} {
		t.Run(fmt.Sprint("supported=", tc.supported), func(t *testing.T) {
			pod := newPod(v1.RestartPolicyAlways, "a")
			pod.Spec.Containers[0].VolumeMounts = mounts
			asked := 0
			in := Inputs{Clock: &fixedClock{now: t0}, SupportsRecursiveReadOnly: func(*v1.Pod) bool { asked++; return tc.supported }}
			s := GenerateAPIPodStatus(pod, rt(running("a", "a1", time.Minute, 0)), in)
			got := ""
			for i, m := range findStatus(s.ContainerStatuses, "a").VolumeMounts {
				if i > 0 {
					got += " "
				}
				if m.RecursiveReadOnly == nil {
					got += m.Name + "=-"
				} else {
					got += m.Name + "=" + string(*m.RecursiveReadOnly)
				}
			}
			if got != tc.want {
				t.Errorf("mounts %s, want %s", got, tc.want)
			}
			if asked != 1 {
				t.Errorf("support asked %d times, want once", asked)
			}
		})
	}

	pod := newPod(v1.RestartPolicyAlways, "a")
	pod.Spec.Containers[0].VolumeMounts = mounts[:2]
	in := Inputs{Clock: &fixedClock{now: t0}, SupportsRecursiveReadOnly: func(*v1.Pod) bool { t.Error("support asked for a pod not asking for it"); return true }}
	GenerateAPIPodStatus(pod, rt(running("a", "a1", time.Minute, 0)), in)
}
