package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxPerPodContainer is how many exited instances of one container of a pod
// are kept: the kubelet's default container GC policy (MaxPerPodContainer 1,
// MinAge 0). The newest exited instance is what the status's lastState and
// `logs --previous` show, and its annotations carry the restart count.
const maxPerPodContainer = 1

// GarbageCollect removes exited container instances beyond the newest
// maxPerPodContainer of each container of each pod sync created (its sandbox
// carries ManagedByAnnotation), so a crash-looping pod does not pile up dead
// containers. Matches the kubelet's containerGC.evictContainers with the
// default policy; pods that left every source are removed whole by
// RemovePod instead.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	pods, err := m.GetPods(ctx)
	if err != nil {
		return err
	}
	log := loggerFrom(ctx)
	var all []error
	for _, p := range pods {
		if !p.Managed {
			continue
		}
		exited := map[string][]*runtimeapi.Container{}
		for _, c := range p.Containers {
			if c.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
				continue
			}
			name := c.GetLabels()[KubernetesContainerNameLabel]
			exited[name] = append(exited[name], c)
		}
		for name, list := range exited {
			if len(list) <= maxPerPodContainer {
				continue
			}
			sort.Slice(list, func(i, j int) bool { return list[i].GetCreatedAt() > list[j].GetCreatedAt() })
			for _, c := range list[maxPerPodContainer:] {
				if _, err := m.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.GetId()}); err != nil && !isNotFound(err) {
					all = append(all, fmt.Errorf("remove dead container %s of %s: %w", c.GetId(), name, err))
					continue
				}
				log.Debug("removed dead container", zap.String("podUID", string(p.UID)), zap.String("container", name), zap.String("containerID", c.GetId()))
			}
		}
	}
	return errors.Join(all...)
}
