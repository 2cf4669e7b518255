package container

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// ResolveRecursiveReadOnly says whether the mount is made recursively
// read-only, given whether the pod's runtime handler supports it: the
// kubelet's resolveRecursiveReadOnly, with its messages. IfPossible
// follows the support; Enabled without it is an error, as are a writable
// mount and one with propagation (which validation refuses before).
func ResolveRecursiveReadOnly(m v1.VolumeMount, supported bool) (bool, error) {
	if m.RecursiveReadOnly == nil || *m.RecursiveReadOnly == v1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !m.ReadOnly {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", m.Name)
	}
	if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q",
			m.Name, *m.MountPropagation)
	}
	switch mode := *m.RecursiveReadOnly; mode {
	case v1.RecursiveReadOnlyIfPossible:
		return supported, nil
	case v1.RecursiveReadOnlyEnabled:
		if !supported {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime", m.Name)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown recursive read-only mode %q", mode)
	}
}

// WantsRecursiveReadOnly reports whether a mount of c asks for recursive
// read-only mode (Enabled or IfPossible), so that the runtime handler's
// support for it must be known.
func WantsRecursiveReadOnly(c *v1.Container) bool { return mountsWantRRO(c.VolumeMounts) }

// PodWantsRecursiveReadOnly is WantsRecursiveReadOnly over every container
// of the pod, init and ephemeral ones included.
func PodWantsRecursiveReadOnly(pod *v1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if mountsWantRRO(pod.Spec.InitContainers[i].VolumeMounts) {
			return true
		}
	}
	for i := range pod.Spec.Containers {
		if mountsWantRRO(pod.Spec.Containers[i].VolumeMounts) {
			return true
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if mountsWantRRO(pod.Spec.EphemeralContainers[i].VolumeMounts) {
			return true
		}
	}
	return false
}

func mountsWantRRO(mounts []v1.VolumeMount) bool {
	for _, vm := range mounts {
		if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly != v1.RecursiveReadOnlyDisabled {
			return true
		}
	}
	return false
}
