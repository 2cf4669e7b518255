package server

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
)

// containerName picks the container a request means: the named one, or the
// only one. Matches kubectl's rule that a multi-container pod needs -c.
func containerName(pod *v1.Pod, name string) (string, error) {
	if name != "" {
		return name, nil
	}
	if len(pod.Spec.Containers) == 1 {
		return pod.Spec.Containers[0].Name, nil
	}
	names := make([]string, 0, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return "", fmt.Errorf("a container name must be specified for pod %s, choose one of: [%s]: %w",
		pod.Name, strings.Join(names, " "), errdefs.ErrInvalidArgument)
}

// containerID returns the runtime ID of the named container's current
// instance, or with previous its last terminated one, from the pod status.
func containerID(pod *v1.Pod, name string, previous bool) (string, error) {
	all := append(append(append([]v1.ContainerStatus{}, pod.Status.ContainerStatuses...),
		pod.Status.InitContainerStatuses...), pod.Status.EphemeralContainerStatuses...)
	for _, cs := range all {
		if cs.Name != name {
			continue
		}
		id := cs.ContainerID
		if previous {
			id = ""
			if cs.LastTerminationState.Terminated != nil {
				id = cs.LastTerminationState.Terminated.ContainerID
			}
			if id == "" {
				return "", fmt.Errorf("previous terminated container %q in pod %q not found: %w", name, pod.Name, errdefs.ErrNotFound)
			}
		}
		if id == "" {
			return "", fmt.Errorf("container %q in pod %q is waiting to start: %w", name, pod.Name, errdefs.ErrFailedPrecondition)
		}
		if _, after, ok := strings.Cut(id, "://"); ok {
			id = after
		}
		return id, nil
	}
	return "", fmt.Errorf("container %q in pod %q: %w", name, pod.Name, errdefs.ErrNotFound)
}
