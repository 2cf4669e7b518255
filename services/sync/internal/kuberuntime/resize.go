package kuberuntime

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/cm"
	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// resourceRequirements are the resizable resources of a container in the
// units the runtime is set in: bytes and milli-CPUs, 0 when unset. Matches
// the kubelet's resourceRequirements.
type resourceRequirements struct {
	memoryLimit   int64
	memoryRequest int64
	cpuLimit      int64
	cpuRequest    int64
}

// containerResourcesFromRequirements matches the kubelet's function of that
// name (without pod-level resources, which sync does not resize).
func containerResourcesFromRequirements(r *v1.ResourceRequirements) resourceRequirements {
	if r == nil {
		return resourceRequirements{}
	}
	return resourceRequirements{
		memoryLimit:   r.Limits.Memory().Value(),
		memoryRequest: r.Requests.Memory().Value(),
		cpuLimit:      r.Limits.Cpu().MilliValue(),
		cpuRequest:    r.Requests.Cpu().MilliValue(),
	}
}

// requirements turns r back into requests and limits, leaving out what is
// unset, so that the runtime keeps what it has for those.
func (r resourceRequirements) requirements() v1.ResourceRequirements {
	out := v1.ResourceRequirements{}
	set := func(list *v1.ResourceList, name v1.ResourceName, q *resource.Quantity) {
		if q.IsZero() {
			return
		}
		if *list == nil {
			*list = v1.ResourceList{}
		}
		(*list)[name] = *q
	}
	set(&out.Requests, v1.ResourceCPU, resource.NewMilliQuantity(r.cpuRequest, resource.DecimalSI))
	set(&out.Limits, v1.ResourceCPU, resource.NewMilliQuantity(r.cpuLimit, resource.DecimalSI))
	set(&out.Requests, v1.ResourceMemory, resource.NewQuantity(r.memoryRequest, resource.BinarySI))
	set(&out.Limits, v1.ResourceMemory, resource.NewQuantity(r.memoryLimit, resource.BinarySI))
	return out
}

// ContainerToUpdateInfo is one running container whose resources are
// updated in place. Matches the kubelet's containerToUpdateInfo.
type ContainerToUpdateInfo struct {
	// Container is the container's allocated spec.
	Container *v1.Container
	// ContainerID is the running instance.
	ContainerID container.ContainerID
	// Desired are the allocated resources; Current what the instance runs
	// with, updated as each resource's step succeeds.
	Desired resourceRequirements
	Current *resourceRequirements
}

// computePodResizeAction decides what the running container (the
// containerIdx'th regular container, or init container when init) needs
// for its actuated resources (status.Resources) to match its allocation
// (the spec of pod, the allocated pod): nothing, an in-place update of
// each resource that differs (ContainersToUpdate, decreases first), or,
// when the container's resizePolicy says RestartContainer for a resource
// that differs, a restart (ContainersToKill and ContainersToStart or
// InitContainersToStart; keep is then false). A resource without a policy
// is NotRequired. Matches the kubelet's computePodResizeAction.
func computePodResizeAction(pod *v1.Pod, containerIdx int, init bool, status *container.Status, changes *PodActions) (keep bool) {
	if status.State != container.ContainerStateRunning {
		return true
	}
	// containerIdx indexes the init containers when init: a sidecar's
	// index may be past the end of the regular containers.
	specs := pod.Spec.Containers
	if init {
		specs = pod.Spec.InitContainers
	}
	spec := &specs[containerIdx]
	desired := containerResourcesFromRequirements(&spec.Resources)
	// An instance without a record of what it runs with is taken as
	// running with nothing set: an update is idempotent (the kubelet does
	// the same with a missing actuated record).
	current := containerResourcesFromRequirements(status.Resources)
	if desired == current {
		return true
	}

	resize := func(name v1.ResourceName, want, have int64) (resize, restart bool) {
		if want == have {
			return false, false
		}
		for _, p := range spec.ResizePolicy {
			if p.ResourceName == name {
				return true, p.RestartPolicy == v1.RestartContainer
			}
		}
		return true, false
	}
	markForUpdate := func(name v1.ResourceName, want, have int64) {
		info := ContainerToUpdateInfo{Container: spec, ContainerID: status.ID, Desired: desired, Current: &current}
		if changes.ContainersToUpdate == nil {
			changes.ContainersToUpdate = map[v1.ResourceName][]ContainerToUpdateInfo{}
		}
		// Decreases go first, so that the sum of the pod's containers
		// never grows past its target on the way.
		if want > have {
			changes.ContainersToUpdate[name] = append(changes.ContainersToUpdate[name], info)
		} else {
			changes.ContainersToUpdate[name] = append([]ContainerToUpdateInfo{info}, changes.ContainersToUpdate[name]...)
		}
	}
	resizeMemLim, restartMemLim := resize(v1.ResourceMemory, desired.memoryLimit, current.memoryLimit)
	resizeMemReq, restartMemReq := resize(v1.ResourceMemory, desired.memoryRequest, current.memoryRequest)
	resizeCPULim, restartCPULim := resize(v1.ResourceCPU, desired.cpuLimit, current.cpuLimit)
	resizeCPUReq, restartCPUReq := resize(v1.ResourceCPU, desired.cpuRequest, current.cpuRequest)
	if restartMemLim || restartMemReq || restartCPULim || restartCPUReq {
		changes.ContainersToKill[status.ID] = ContainerToKillInfo{
			Name:      status.Name,
			Container: spec,
			Message:   fmt.Sprintf("Container %s resize requires restart", spec.Name),
		}
		if init {
			changes.InitContainersToStart = append(changes.InitContainersToStart, containerIdx)
		} else {
			changes.ContainersToStart = append(changes.ContainersToStart, containerIdx)
		}
		changes.UpdatePodResources = true
		return false
	}
	switch {
	case resizeMemLim:
		markForUpdate(v1.ResourceMemory, desired.memoryLimit, current.memoryLimit)
	case resizeMemReq:
		markForUpdate(v1.ResourceMemory, desired.memoryRequest, current.memoryRequest)
	}
	switch {
	case resizeCPULim:
		markForUpdate(v1.ResourceCPU, desired.cpuLimit, current.cpuLimit)
	case resizeCPUReq:
		markForUpdate(v1.ResourceCPU, desired.cpuRequest, current.cpuRequest)
	}
	return true
}

// doPodResizeAction updates the containers of changes.ContainersToUpdate
// in place: memory first, then CPU, each in the order computePodResizeAction
// put them (decreases first), after checking that no memory limit goes
// below what its container uses (validateMemoryResizeAction). With pod
// cgroups (PodCgroups) the pod's cgroup follows: its limit is raised before
// the containers' and lowered after them, its CPU shares likewise, so that
// no container is ever allowed more than its pod. It stops at the first
// failure, leaving the rest to the next sync, which sees what was done in
// the actuated records and the pod cgroup. Matches the kubelet's
// doPodResizeAction.
func (m *Manager) doPodResizeAction(ctx context.Context, pod *v1.Pod, changes PodActions) error {
	if err := m.validateMemoryResizeAction(ctx, changes); err != nil {
		return err
	}
	var desired, current cm.ResourceConfig
	if pcg := m.opts.PodCgroups; pcg != nil {
		desired = pcg.ResourceConfig(pod)
		var err error
		if current, err = pcg.Current(pod); err != nil {
			return fmt.Errorf("resize pod in place: %w", err)
		}
	}
	for _, name := range []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
		infos := changes.ContainersToUpdate[name]
		if len(infos) == 0 {
			continue
		}
		if err := m.resizeResource(ctx, pod, name, infos, current, desired); err != nil {
			return fmt.Errorf("resize pod in place (%s): %w", name, err)
		}
	}
	return nil
}

// resizeResource updates resource name of the containers infos and, with
// pod cgroups, the pod's: the kubelet's resizeContainers, whose pod cgroup
// limit goes up before the containers and down after them, and requests
// (CPU shares) likewise. A desired pod limit that is unset (a Burstable pod
// with a container without one) keeps the current one, as the kubelet's
// does.
func (m *Manager) resizeResource(ctx context.Context, pod *v1.Pod, name v1.ResourceName, infos []ContainerToUpdateInfo, current, desired cm.ResourceConfig) error {
	pcg := m.opts.PodCgroups
	if pcg == nil {
		return m.updatePodContainerResources(ctx, pod, name, infos)
	}
	var curLimit, newLimit, curRequest, newRequest int64
	var limitCfg, requestCfg cm.ResourceConfig
	switch name {
	case v1.ResourceMemory:
		if desired.Memory == nil {
			desired.Memory = current.Memory
		}
		curLimit, newLimit = *current.Memory, *desired.Memory
		limitCfg.Memory = desired.Memory
	case v1.ResourceCPU:
		if desired.CPUQuota == nil {
			desired.CPUQuota, desired.CPUPeriod = current.CPUQuota, current.CPUPeriod
		}
		curLimit, newLimit = *current.CPUQuota, *desired.CPUQuota
		curRequest, newRequest = int64(*current.CPUShares), int64(*desired.CPUShares)
		limitCfg.CPUQuota, limitCfg.CPUPeriod = desired.CPUQuota, desired.CPUPeriod
		requestCfg.CPUShares = desired.CPUShares
	}
	set := func(cfg cm.ResourceConfig) error {
		if err := pcg.Set(pod, cfg); err != nil {
			return fmt.Errorf("failed to set cgroup config for %s of pod %s: %w", name, pod.Name, err)
		}
		return nil
	}
	// Limits grow before requests, and requests shrink before limits, to
	// keep requests at or under limits.
	if newLimit > curLimit {
		if err := set(limitCfg); err != nil {
			return err
		}
	}
	if newRequest > curRequest {
		if err := set(requestCfg); err != nil {
			return err
		}
	}
	if err := m.updatePodContainerResources(ctx, pod, name, infos); err != nil {
		return err
	}
	if newRequest < curRequest {
		if err := set(requestCfg); err != nil {
			return err
		}
	}
	if newLimit < curLimit {
		if err := set(limitCfg); err != nil {
			return err
		}
	}
	return nil
}

// validateMemoryResizeAction refuses a resize that sets or lowers a
// container's memory limit to no more than the memory the container uses
// now (CRI ContainerStats usage), which the kernel could only meet by
// killing it. Matches the kubelet's validateMemoryResizeAction (its
// container part; the message is the kubelet's).
func (m *Manager) validateMemoryResizeAction(ctx context.Context, changes PodActions) error {
	var errs []error
	for _, info := range changes.ContainersToUpdate[v1.ResourceMemory] {
		limit := info.Desired.memoryLimit
		if limit == 0 || (info.Current.memoryLimit != 0 && limit >= info.Current.memoryLimit) {
			continue // no limit, or not lowered
		}
		resp, err := m.runtime.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: info.ContainerID.ID})
		usage := resp.GetStats().GetMemory().GetUsageBytes()
		switch {
		case err != nil || usage == nil:
			errs = append(errs, fmt.Errorf("missing container %q memory usage", info.Container.Name))
		case usage.GetValue() >= uint64(limit):
			errs = append(errs, fmt.Errorf("attempting to set container %q memory limit (%d) below current usage (%d)",
				info.Container.Name, limit, usage.GetValue()))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot decrease memory limits: %w", errors.Join(errs...))
	}
	return nil
}

// updatePodContainerResources sets resource name of each container to its
// desired value, with the other resource as currently set, and records
// what the runtime accepted. Matches the kubelet's
// updatePodContainerResources.
func (m *Manager) updatePodContainerResources(ctx context.Context, pod *v1.Pod, name v1.ResourceName, infos []ContainerToUpdateInfo) error {
	for _, info := range infos {
		next := *info.Current
		switch name {
		case v1.ResourceMemory:
			next.memoryLimit, next.memoryRequest = info.Desired.memoryLimit, info.Desired.memoryRequest
		case v1.ResourceCPU:
			next.cpuLimit, next.cpuRequest = info.Desired.cpuLimit, info.Desired.cpuRequest
		}
		c := info.Container.DeepCopy()
		c.Resources = next.requirements()
		if err := m.updateContainerResources(ctx, pod, c, info.ContainerID); err != nil {
			return err
		}
		// What the runtime just accepted; its status may lag behind.
		*info.Current = next
	}
	return nil
}

// updateContainerResources sends c's resources to the runtime for the
// running instance id and records them as actuated. Matches the kubelet's
// updateContainerResources.
func (m *Manager) updateContainerResources(ctx context.Context, pod *v1.Pod, c *v1.Container, id container.ContainerID) error {
	res, err := generateLinuxContainerResources(pod, c, m.opts.Container)
	if err != nil {
		return fmt.Errorf("container %s: %w", c.Name, err)
	}
	if _, err := m.runtime.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id.ID, Linux: res,
	}); err != nil {
		return fmt.Errorf("update resources of container %s: %w", c.Name, err)
	}
	loggerFrom(ctx).Info("updated container resources in place", zap.String("container", c.Name),
		zap.Int64("cpuShares", res.GetCpuShares()), zap.Int64("cpuQuota", res.GetCpuQuota()),
		zap.Int64("memoryLimit", res.GetMemoryLimitInBytes()))
	if err := m.opts.Actuated.SetActuatedResources(pod.UID, id.ID, c.Resources); err != nil {
		// The runtime has the values; only their durability is lost, and
		// the next sync's update repeats an idempotent call at worst.
		loggerFrom(ctx).Error("cannot record actuated resources", zap.String("container", c.Name), zap.Error(err))
	}
	return nil
}
