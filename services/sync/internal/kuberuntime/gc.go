package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"
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
// containers, then the pod's dead sandboxes (evictSandboxes). Matches the
// kubelet's containerGC.evictContainers with the default policy, then
// evictSandboxes; pods that left every source are removed whole by
// RemovePod instead.
func (m *Manager) GarbageCollect(ctx context.Context) error {
	return m.garbageCollect(ctx, nil)
}

// DeleteAllUnusedContainers is GarbageCollect that also empties the pods
// terminated says are terminated for good (their worker starts nothing
// again) while a source still holds them: every container of theirs that is
// not running goes, then every sandbox that is not ready, the newest
// included. The eviction manager asks for it before evicting pods for disk
// pressure. Matches the kubelet's DeleteAllUnusedContainers
// (GarbageCollect with evictNonDeletedPods, ShouldPodRuntimeBeRemoved).
func (m *Manager) DeleteAllUnusedContainers(ctx context.Context, terminated func(types.UID) bool) error {
	loggerFrom(ctx).Info("attempting to delete unused containers")
	return m.garbageCollect(ctx, terminated)
}

// garbageCollect is GarbageCollect, emptying the pods terminated (nil: none)
// names.
func (m *Manager) garbageCollect(ctx context.Context, terminated func(types.UID) bool) error {
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
		removeAll := terminated != nil && terminated(p.UID)
		removed := map[string]bool{}
		exited := map[string][]*runtimeapi.Container{}
		for _, c := range p.Containers {
			// A terminated pod loses its created and unknown instances
			// too: the kubelet's evictableContainers keeps only running
			// ones.
			dead := c.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED ||
				removeAll && c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING
			if !dead {
				continue
			}
			name := c.GetLabels()[KubernetesContainerNameLabel]
			exited[name] = append(exited[name], c)
		}
		keep := maxPerPodContainer
		if removeAll {
			keep = 0
		}
		for name, list := range exited {
			if len(list) <= keep {
				continue
			}
			sort.Slice(list, func(i, j int) bool { return list[i].GetCreatedAt() > list[j].GetCreatedAt() })
			for _, c := range list[keep:] {
				if _, err := m.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.GetId()}); err != nil && !isNotFound(err) {
					all = append(all, fmt.Errorf("remove dead container %s of %s: %w", c.GetId(), name, err))
					continue
				}
				removed[c.GetId()] = true
				log.Debug("removed dead container", zap.String("podUID", string(p.UID)), zap.String("container", name), zap.String("containerID", c.GetId()))
			}
		}
		all = append(all, m.evictSandboxes(ctx, p, removed, !removeAll)...)
	}
	return errors.Join(all...)
}

// evictSandboxes removes the sandboxes of p, a pod that still exists, that
// are dead: not ready, holding no container (but those in removed, just
// garbage collected), and, with keepNewest, not the pod's newest, which is
// kept whatever its state, as the last word on the pod's network and
// attempt. Matches the kubelet's containerGC.evictSandboxes for a pod that
// still exists (removeOldestNSandboxes(sandboxes, len-1) over the inactive
// ones; len without keepNewest, for a terminated pod). Without it every
// sandbox change (a runtime or node restart, a pod whose sandbox died) left
// one more sandbox behind for the pod's lifetime.
func (m *Manager) evictSandboxes(ctx context.Context, p *RunningPod, removed map[string]bool, keepNewest bool) []error {
	kept := 0
	if keepNewest {
		kept = 1
	}
	if len(p.Sandboxes) <= kept {
		return nil
	}
	holds := map[string]bool{}
	for _, c := range p.Containers {
		if !removed[c.GetId()] {
			holds[c.GetPodSandboxId()] = true
		}
	}
	sandboxes := slices.Clone(p.Sandboxes)
	sort.Slice(sandboxes, func(i, j int) bool { return sandboxes[i].GetCreatedAt() > sandboxes[j].GetCreatedAt() })
	log := loggerFrom(ctx)
	var all []error
	for _, sb := range sandboxes[kept:] {
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY || holds[sb.GetId()] {
			continue
		}
		if _, err := m.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.GetId()}); err != nil && !isNotFound(err) {
			all = append(all, fmt.Errorf("remove dead sandbox %s: %w", sb.GetId(), err))
			continue
		}
		log.Debug("removed dead sandbox", zap.String("podUID", string(p.UID)), zap.String("sandbox", sb.GetId()))
	}
	return all
}
