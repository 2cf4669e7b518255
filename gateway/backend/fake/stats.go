package fake

import (
	"context"
	"hash/fnv"
	"sync/atomic"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Invented resource usage. CPU grows with the time a container has run;
// memory and disk are stable per container; all are plausible for a small
// process.
const (
	cpuNanoCores        = 5_000_000 // 0.5% of a core while running
	baseMemoryBytes     = 4 << 20
	writableLayerBytes  = 32 << 10
	writableLayerInodes = 12
)

// ContainerStats returns one container's stats; unknown IDs are NotFound.
func (r *Runtime) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	if err := r.inject(ctx, "ContainerStats"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, err := r.st.container(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: r.containerStatsLocked(c, r.now())}, nil
}

// ListContainerStats returns the stats of the running containers matching
// the filter (id and pod_sandbox_id as full IDs or unique prefixes, labels).
func (r *Runtime) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	if err := r.inject(ctx, "ListContainerStats"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return &runtimeapi.ListContainerStatsResponse{Stats: r.listContainerStatsLocked(req.GetFilter())}, nil
}

func (r *Runtime) listContainerStatsLocked(f *runtimeapi.ContainerStatsFilter) []*runtimeapi.ContainerStats {
	now := r.now()
	out := []*runtimeapi.ContainerStats{}
	running := &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	for _, c := range r.filterContainersLocked(f.GetId(), f.GetPodSandboxId(), running, f.GetLabelSelector()) {
		out = append(out, r.containerStatsLocked(c, now))
	}
	return out
}

// PodSandboxStats returns a sandbox's stats: the sum of its containers'
// plus network and process counts; unknown IDs are NotFound.
func (r *Runtime) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	if err := r.inject(ctx, "PodSandboxStats"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	sb, err := r.st.sandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: r.sandboxStatsLocked(sb, r.now())}, nil
}

// ListPodSandboxStats returns the stats of the READY sandboxes matching the
// filter, as containerd lists only ready ones.
func (r *Runtime) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	if err := r.inject(ctx, "ListPodSandboxStats"); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: r.listSandboxStatsLocked(req.GetFilter())}, nil
}

func (r *Runtime) listSandboxStatsLocked(f *runtimeapi.PodSandboxStatsFilter) []*runtimeapi.PodSandboxStats {
	now := r.now()
	out := []*runtimeapi.PodSandboxStats{}
	ready := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
	for _, sb := range r.filterSandboxesLocked(f.GetId(), ready, f.GetLabelSelector()) {
		out = append(out, r.sandboxStatsLocked(sb, now))
	}
	return out
}

// containerStatsLocked invents a container's usage at now. It only writes
// c.lastCPU, atomically, so it is safe under the read lock.
func (r *Runtime) containerStatsLocked(c *container, now int64) *runtimeapi.ContainerStats {
	var ran int64
	switch {
	case c.startedAt == 0:
	case c.state == runtimeapi.ContainerState_CONTAINER_RUNNING:
		ran = now - c.startedAt
	default:
		ran = c.finishedAt - c.startedAt
	}
	cpu := uint64(max(ran, 0)) / 1e9 * cpuNanoCores
	cpu += uint64(max(ran, 0)) % 1e9 * cpuNanoCores / 1e9
	// Never report less than before, even if the clock steps back.
	for {
		last := atomic.LoadUint64(&c.lastCPU)
		if cpu <= last {
			cpu = last
			break
		}
		if atomic.CompareAndSwapUint64(&c.lastCPU, last, cpu) {
			break
		}
	}
	var mem, rss, nanoCores uint64
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		h := fnv.New32a()
		h.Write([]byte(c.id))
		mem = baseMemoryBytes + uint64(h.Sum32()%(8<<20))
		rss = mem * 3 / 4
		nanoCores = cpuNanoCores
	}
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{
			Id:          c.id,
			Metadata:    &runtimeapi.ContainerMetadata{Name: c.config.GetMetadata().GetName(), Attempt: c.config.GetMetadata().GetAttempt()},
			Labels:      cloneMap(c.config.GetLabels()),
			Annotations: cloneMap(c.config.GetAnnotations()),
		},
		Cpu: &runtimeapi.CpuUsage{
			Timestamp:            now,
			UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu},
			UsageNanoCores:       &runtimeapi.UInt64Value{Value: nanoCores},
		},
		Memory: &runtimeapi.MemoryUsage{
			Timestamp:       now,
			WorkingSetBytes: &runtimeapi.UInt64Value{Value: mem},
			UsageBytes:      &runtimeapi.UInt64Value{Value: mem},
			RssBytes:        &runtimeapi.UInt64Value{Value: rss},
			PageFaults:      &runtimeapi.UInt64Value{Value: cpu / 1e6},
			MajorPageFaults: &runtimeapi.UInt64Value{Value: 0},
		},
		WritableLayer: &runtimeapi.FilesystemUsage{
			Timestamp:  now,
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: fakeFsMountpoint},
			UsedBytes:  &runtimeapi.UInt64Value{Value: writableLayerBytes},
			InodesUsed: &runtimeapi.UInt64Value{Value: writableLayerInodes},
		},
	}
}

func (r *Runtime) sandboxStatsLocked(sb *sandbox, now int64) *runtimeapi.PodSandboxStats {
	var cpu, nanoCores, mem, rss, procs uint64
	var cstats []*runtimeapi.ContainerStats
	for _, c := range sb.containers {
		cs := r.containerStatsLocked(c, now)
		cpu += cs.Cpu.UsageCoreNanoSeconds.Value
		nanoCores += cs.Cpu.UsageNanoCores.Value
		mem += cs.Memory.WorkingSetBytes.Value
		rss += cs.Memory.RssBytes.Value
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			procs++
			cstats = append(cstats, cs)
		}
	}
	ready := sb.state == runtimeapi.PodSandboxState_SANDBOX_READY
	if ready {
		procs++ // the pause process
	}
	// Network counters grow with the sandbox's age, like CPU.
	age := uint64(max(now-sb.createdAt, 0)) / 1e6 // ms
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id:          sb.id,
			Metadata:    &runtimeapi.PodSandboxMetadata{Name: sb.config.GetMetadata().GetName(), Uid: sb.config.GetMetadata().GetUid(), Namespace: sb.config.GetMetadata().GetNamespace(), Attempt: sb.config.GetMetadata().GetAttempt()},
			Labels:      cloneMap(sb.config.GetLabels()),
			Annotations: cloneMap(sb.config.GetAnnotations()),
		},
		Linux: &runtimeapi.LinuxPodSandboxStats{
			Cpu: &runtimeapi.CpuUsage{
				Timestamp:            now,
				UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu},
				UsageNanoCores:       &runtimeapi.UInt64Value{Value: nanoCores},
			},
			Memory: &runtimeapi.MemoryUsage{
				Timestamp:       now,
				WorkingSetBytes: &runtimeapi.UInt64Value{Value: mem},
				UsageBytes:      &runtimeapi.UInt64Value{Value: mem},
				RssBytes:        &runtimeapi.UInt64Value{Value: rss},
			},
			Network: &runtimeapi.NetworkUsage{
				Timestamp: now,
				DefaultInterface: &runtimeapi.NetworkInterfaceUsage{
					Name:     "eth0",
					RxBytes:  &runtimeapi.UInt64Value{Value: age * 10},
					RxErrors: &runtimeapi.UInt64Value{},
					TxBytes:  &runtimeapi.UInt64Value{Value: age * 5},
					TxErrors: &runtimeapi.UInt64Value{},
				},
			},
			Process:    &runtimeapi.ProcessUsage{Timestamp: now, ProcessCount: &runtimeapi.UInt64Value{Value: procs}},
			Containers: cstats,
		},
	}
}

// StreamContainerStats is ListContainerStats in chunks of up to 500 items.
func (r *Runtime) StreamContainerStats(req *runtimeapi.StreamContainerStatsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamContainerStatsResponse]) error {
	if err := r.inject(stream.Context(), "StreamContainerStats"); err != nil {
		return err
	}
	r.mu.RLock()
	items := r.listContainerStatsLocked(req.GetFilter())
	r.mu.RUnlock()
	return sendChunks(items, func(chunk []*runtimeapi.ContainerStats) error {
		return stream.Send(&runtimeapi.StreamContainerStatsResponse{ContainerStats: chunk})
	})
}

// StreamPodSandboxStats is ListPodSandboxStats in chunks of up to 500 items.
func (r *Runtime) StreamPodSandboxStats(req *runtimeapi.StreamPodSandboxStatsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxStatsResponse]) error {
	if err := r.inject(stream.Context(), "StreamPodSandboxStats"); err != nil {
		return err
	}
	r.mu.RLock()
	items := r.listSandboxStatsLocked(req.GetFilter())
	r.mu.RUnlock()
	return sendChunks(items, func(chunk []*runtimeapi.PodSandboxStats) error {
		return stream.Send(&runtimeapi.StreamPodSandboxStatsResponse{PodSandboxStats: chunk})
	})
}
