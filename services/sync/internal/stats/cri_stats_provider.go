package stats

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// Runtime is the part of CRI the stats come from
// (runtimeapi.RuntimeServiceClient, through the gateway). Errors are the
// runtime's gRPC statuses; ListPodSandboxStats may be Unimplemented, and
// the pods' stats are then built from ListContainerStats alone.
type Runtime interface {
	ListPodSandbox(ctx context.Context, in *runtimeapi.ListPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error)
	ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error)
	ListPodSandboxStats(ctx context.Context, in *runtimeapi.ListPodSandboxStatsRequest, opts ...grpc.CallOption) (*runtimeapi.ListPodSandboxStatsResponse, error)
	ListContainerStats(ctx context.Context, in *runtimeapi.ListContainerStatsRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainerStatsResponse, error)
}

var _ Runtime = runtimeapi.RuntimeServiceClient(nil)

// ImageService is the part of CRI the image filesystem's stats come from
// (runtimeapi.ImageServiceClient).
type ImageService interface {
	ImageFsInfo(ctx context.Context, in *runtimeapi.ImageFsInfoRequest, opts ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error)
}

var _ ImageService = runtimeapi.ImageServiceClient(nil)

// cpuCachePeriod is the kubelet's defaultCachePeriod: a CPU sample older
// than this is forgotten.
const cpuCachePeriod = 10 * time.Minute

// cpuUsageRecord is one cumulative CPU sample and the rate computed when
// it was taken (the kubelet's cpuUsageRecord).
type cpuUsageRecord struct {
	timestamp      int64 // ns since the epoch
	usageCoreNanos uint64
	usageNanoCores *uint64
}

// cpuUsageCache keeps the previous cumulative CPU sample per container ID
// (and per cgroup for the node), so usageNanoCores can be computed when
// the runtime does not fill it.
type cpuUsageCache struct {
	mu      sync.RWMutex
	records map[string]*cpuUsageRecord
}

// get returns the rate last computed for id, or nil. Matches the cache half
// of the kubelet's getContainerUsageNanoCores.
func (c *cpuUsageCache) get(id string) *uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.records[id]
	if !ok || r.usageNanoCores == nil {
		return nil
	}
	v := *r.usageNanoCores
	return &v
}

// update records a new cumulative sample of id and returns the rate since
// the previous one: nil for the first sample, or when the counter went
// back (a restarted container reusing the ID), or time did not move.
// Matches the kubelet's getAndUpdateContainerUsageNanoCores.
func (c *cpuUsageCache) update(id string, timestamp int64, usageCoreNanos uint64) (*uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, ok := c.records[id]
	if !ok || usageCoreNanos < prev.usageCoreNanos {
		c.records[id] = &cpuUsageRecord{timestamp: timestamp, usageCoreNanos: usageCoreNanos}
		return nil, nil
	}
	interval := timestamp - prev.timestamp
	if interval <= 0 {
		return nil, fmt.Errorf("cpu sample of %s: zero or negative interval (%d - %d)", id, timestamp, prev.timestamp)
	}
	rate := uint64(float64(usageCoreNanos-prev.usageCoreNanos) / float64(interval) * float64(time.Second))
	stored := rate
	c.records[id] = &cpuUsageRecord{timestamp: timestamp, usageCoreNanos: usageCoreNanos, usageNanoCores: &stored}
	return &rate, nil
}

// cleanup forgets samples older than cpuCachePeriod (the kubelet's
// cleanupOutdatedCaches).
func (c *cpuUsageCache) cleanup(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, r := range c.records {
		if now.Sub(time.Unix(0, r.timestamp)) > cpuCachePeriod {
			delete(c.records, id)
		}
	}
}

// containerUsageNanoCores is the runtime's usageNanoCores when it gives one,
// else the rate from the cache: updated with this sample when update is set
// (the kubelet's getAndUpdateContainerUsageNanoCores), read only otherwise
// (getContainerUsageNanoCores).
func (p *Provider) containerUsageNanoCores(ctx context.Context, s *runtimeapi.ContainerStats, update bool) *uint64 {
	if s.GetAttributes() == nil || s.GetCpu() == nil {
		return nil
	}
	if v := s.GetCpu().GetUsageNanoCores(); v != nil {
		return &v.Value
	}
	if !update {
		return p.cpuCache.get(s.GetAttributes().GetId())
	}
	if s.GetCpu().GetUsageCoreNanoSeconds() == nil {
		return nil
	}
	rate, err := p.cpuCache.update(s.GetAttributes().GetId(), s.GetCpu().GetTimestamp(), s.GetCpu().GetUsageCoreNanoSeconds().GetValue())
	if err != nil {
		logctx.From(ctx).Warn("failed updating cpu usage nano core", zap.Error(err))
	}
	return rate
}

// podAndContainerMaps lists every sandbox and container and keeps those
// stats are reported for: per pod (namespace and name) the ready sandboxes,
// else the newest; only running containers. Matches the kubelet's
// getPodAndContainerMaps with removeTerminatedPods and
// removeTerminatedContainers.
func (p *Provider) podAndContainerMaps(ctx context.Context) (map[string]*runtimeapi.Container, map[string]*runtimeapi.PodSandbox, error) {
	cs, err := p.opts.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, nil, fmt.Errorf("failed to list all containers: %w", err)
	}
	sbs, err := p.opts.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, nil, fmt.Errorf("failed to list all pod sandboxes: %w", err)
	}
	type podKey struct{ namespace, name string }
	byPod := map[podKey][]*runtimeapi.PodSandbox{}
	for _, sb := range sbs.GetItems() {
		k := podKey{sb.GetMetadata().GetNamespace(), sb.GetMetadata().GetName()}
		byPod[k] = append(byPod[k], sb)
	}
	sandboxes := map[string]*runtimeapi.PodSandbox{}
	for _, group := range byPod {
		ready := false
		for _, sb := range group {
			if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				sandboxes[sb.GetId()] = sb
				ready = true
			}
		}
		if !ready {
			newest := group[0]
			for _, sb := range group[1:] {
				if sb.GetCreatedAt() > newest.GetCreatedAt() {
					newest = sb
				}
			}
			sandboxes[newest.GetId()] = newest
		}
	}
	containers := map[string]*runtimeapi.Container{}
	for _, c := range cs.GetContainers() {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			containers[c.GetId()] = c
		}
	}
	return containers, sandboxes, nil
}

// buildPodStats names the pod of a sandbox; its start time is the
// sandbox's creation (the kubelet's buildPodStats).
func buildPodStats(sb *runtimeapi.PodSandbox) *statsapi.PodStats {
	return &statsapi.PodStats{
		PodRef: statsapi.PodReference{
			Name:      sb.GetMetadata().GetName(),
			Namespace: sb.GetMetadata().GetNamespace(),
			UID:       sb.GetMetadata().GetUid(),
		},
		StartTime: metav1.NewTime(time.Unix(0, sb.GetCreatedAt())),
	}
}

// unimplemented reports whether the runtime does not serve the RPC, which
// the kubelet answers by building the stats another way.
func unimplemented(err error) bool {
	s, ok := status.FromError(err)
	return ok && s.Code() == codes.Unimplemented
}

// podStatsForm is how listPods turns the runtime's samples into a pod's
// stats: in full, or CPU and memory only.
type podStatsForm struct {
	// container makes one container's stats.
	container func(cs *runtimeapi.ContainerStats, c *runtimeapi.Container, sb *runtimeapi.PodSandbox) *statsapi.ContainerStats
	// sandbox adds the pod-level figures of ListPodSandboxStats.
	sandbox func(ps *statsapi.PodStats, sbs *runtimeapi.PodSandboxStats)
	// finish completes a pod once its containers are in; nil for none.
	finish func(ps *statsapi.PodStats)
}

// listPods is every pod's stats in form: from ListPodSandboxStats (the
// kubelet's listPodStatsStrictlyFromCRI), or, when the runtime does not
// implement it, from ListContainerStats with the pod's CPU and memory
// summed over its containers (listPodStatsPartiallyFromCRI without
// cAdvisor).
func (p *Provider) listPods(ctx context.Context, form podStatsForm) ([]statsapi.PodStats, error) {
	containers, sandboxes, err := p.podAndContainerMaps(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to get pod or container map: %w", err)
	}
	finish := func(ps *statsapi.PodStats) statsapi.PodStats {
		if form.finish != nil {
			form.finish(ps)
		}
		return *ps
	}
	var result []statsapi.PodStats
	resp, err := p.opts.Runtime.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
	switch {
	case err == nil:
		for _, sbs := range resp.GetStats() {
			sb, ok := sandboxes[sbs.GetAttributes().GetId()]
			if !ok {
				continue
			}
			ps := buildPodStats(sb)
			for _, cs := range sbs.GetLinux().GetContainers() {
				if c, ok := containers[cs.GetAttributes().GetId()]; ok {
					ps.Containers = append(ps.Containers, *form.container(cs, c, sb))
				}
			}
			form.sandbox(ps, sbs)
			result = append(result, finish(ps))
		}
	case unimplemented(err):
		cstats, err := p.opts.Runtime.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
		if err != nil {
			return nil, fmt.Errorf("failed to list all container stats: %w", err)
		}
		bySandbox := map[string]*statsapi.PodStats{}
		var order []string
		for _, cs := range cstats.GetStats() {
			c, ok := containers[cs.GetAttributes().GetId()]
			if !ok {
				continue
			}
			sb, ok := sandboxes[c.GetPodSandboxId()]
			if !ok {
				continue
			}
			ps, ok := bySandbox[sb.GetId()]
			if !ok {
				ps = buildPodStats(sb)
				bySandbox[sb.GetId()] = ps
				order = append(order, sb.GetId())
			}
			s := form.container(cs, c, sb)
			addPodCPUMemoryStats(ps, s)
			ps.Containers = append(ps.Containers, *s)
		}
		for _, id := range order {
			result = append(result, finish(bySandbox[id]))
		}
	default:
		return nil, err
	}
	sortPods(result)
	return result, nil
}

// listPodStats is every pod's full stats (listPods). update feeds this
// sample to the usageNanoCores cache.
func (p *Provider) listPodStats(ctx context.Context, update bool, rootFs *fsInfo) ([]statsapi.PodStats, error) {
	fsCache := map[string]*fsInfo{}
	result, err := p.listPods(ctx, podStatsForm{
		container: func(cs *runtimeapi.ContainerStats, c *runtimeapi.Container, sb *runtimeapi.PodSandbox) *statsapi.ContainerStats {
			return p.makeContainerStats(ctx, cs, c, sb, rootFs, fsCache, update)
		},
		sandbox: addCRIPodStats,
		finish:  func(ps *statsapi.PodStats) { p.makePodStorageStats(ctx, ps, rootFs) },
	})
	if err != nil {
		return nil, err
	}
	p.cpuCache.cleanup(p.opts.Now())
	listed := make(map[string]bool, len(result))
	for _, ps := range result {
		listed[ps.PodRef.UID] = true
	}
	p.forgetVolumes(listed)
	return result, nil
}

// listPodCPUAndMemoryStats is every pod's CPU and memory, what the
// resource metrics and only_cpu_and_memory need; it never updates the
// usageNanoCores cache. Matches the kubelet's ListPodCPUAndMemoryStats.
func (p *Provider) listPodCPUAndMemoryStats(ctx context.Context) ([]statsapi.PodStats, error) {
	return p.listPods(ctx, podStatsForm{
		container: func(cs *runtimeapi.ContainerStats, c *runtimeapi.Container, _ *runtimeapi.PodSandbox) *statsapi.ContainerStats {
			return p.makeContainerCPUAndMemoryStats(ctx, cs, c)
		},
		sandbox: func(ps *statsapi.PodStats, sbs *runtimeapi.PodSandboxStats) {
			addCRIPodCPUStats(ps, sbs)
			addCRIPodMemoryStats(ps, sbs)
		},
	})
}

// sortPods orders pods and their containers by name, so answers do not
// shuffle with the runtime's list order (the kubelet's follow map order).
func sortPods(pods []statsapi.PodStats) {
	sort.Slice(pods, func(i, j int) bool {
		a, b := pods[i].PodRef, pods[j].PodRef
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	for i := range pods {
		sort.Slice(pods[i].Containers, func(a, b int) bool { return pods[i].Containers[a].Name < pods[i].Containers[b].Name })
	}
}

func u64(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	x := v.GetValue()
	return &x
}

func zero() *uint64 { var z uint64; return &z }

// makeContainerStats is one container's full stats: start time (the
// container's creation), CPU, memory and swap from CRI, where a missing
// section reads as zeros at now; its writable layer, with the capacity of
// the filesystem it lives on; its logs. Matches the kubelet's
// makeContainerStats.
func (p *Provider) makeContainerStats(ctx context.Context, s *runtimeapi.ContainerStats, c *runtimeapi.Container, sb *runtimeapi.PodSandbox,
	rootFs *fsInfo, fsCache map[string]*fsInfo, update bool) *statsapi.ContainerStats {
	now := metav1.NewTime(p.opts.Now())
	out := &statsapi.ContainerStats{
		Name:      s.GetAttributes().GetMetadata().GetName(),
		StartTime: metav1.NewTime(time.Unix(0, c.GetCreatedAt())),
		CPU:       &statsapi.CPUStats{},
		Memory:    &statsapi.MemoryStats{},
		Rootfs:    &statsapi.FsStats{},
		Swap:      &statsapi.SwapStats{},
	}
	if cpu := s.GetCpu(); cpu != nil {
		out.CPU.Time = metav1.NewTime(time.Unix(0, cpu.GetTimestamp()))
		out.CPU.UsageCoreNanoSeconds = u64(cpu.GetUsageCoreNanoSeconds())
		out.CPU.UsageNanoCores = p.containerUsageNanoCores(ctx, s, update)
		out.CPU.PSI = psiStats(cpu.GetPsi())
	} else {
		out.CPU = &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: zero(), UsageNanoCores: zero()}
	}
	if m := s.GetMemory(); m != nil {
		*out.Memory = statsapi.MemoryStats{
			Time:            metav1.NewTime(time.Unix(0, m.GetTimestamp())),
			WorkingSetBytes: u64(m.GetWorkingSetBytes()),
			UsageBytes:      u64(m.GetUsageBytes()),
			RSSBytes:        u64(m.GetRssBytes()),
			AvailableBytes:  u64(m.GetAvailableBytes()),
			PageFaults:      u64(m.GetPageFaults()),
			MajorPageFaults: u64(m.GetMajorPageFaults()),
			PSI:             psiStats(m.GetPsi()),
		}
	} else {
		*out.Memory = statsapi.MemoryStats{Time: now, WorkingSetBytes: zero(), UsageBytes: zero(), RSSBytes: zero()}
	}
	// KubeletPSI (GA): the container's IO pressure, stamped now when the
	// runtime reports no IO.
	if io := s.GetIo(); io != nil {
		out.IO = &statsapi.IOStats{Time: metav1.NewTime(time.Unix(0, io.GetTimestamp())), PSI: psiStats(io.GetPsi())}
	} else {
		out.IO = &statsapi.IOStats{Time: now}
	}
	if sw := s.GetSwap(); sw != nil {
		*out.Swap = statsapi.SwapStats{
			Time:               metav1.NewTime(time.Unix(0, sw.GetTimestamp())),
			SwapUsageBytes:     u64(sw.GetSwapUsageBytes()),
			SwapAvailableBytes: u64(sw.GetSwapAvailableBytes()),
		}
	} else {
		*out.Swap = statsapi.SwapStats{Time: now, SwapUsageBytes: zero(), SwapAvailableBytes: zero()}
	}
	if wl := s.GetWritableLayer(); wl != nil {
		out.Rootfs.Time = metav1.NewTime(time.Unix(0, wl.GetTimestamp()))
		out.Rootfs.UsedBytes = u64(wl.GetUsedBytes())
		out.Rootfs.InodesUsed = u64(wl.GetInodesUsed())
		if mp := wl.GetFsId().GetMountpoint(); mp != "" {
			fi, seen := fsCache[mp]
			if !seen {
				// A filesystem this node cannot see (the fake runtime's)
				// leaves its capacity out, as the kubelet's getFsInfo.
				if got, err := dirFsInfo(mp, p.opts.Now()); err == nil {
					fi = &got
				}
				fsCache[mp] = fi
			}
			if fi != nil {
				setFsCapacity(out.Rootfs, fi)
			}
		}
	}
	meta := sb.GetMetadata()
	dir := kuberuntime.BuildContainerLogsDirectory(p.opts.PodLogsRoot, meta.GetNamespace(), meta.GetName(), meta.GetUid(), c.GetMetadata().GetName())
	logs, err := p.filesUsage(dir, rootFs)
	if err != nil {
		logctx.From(ctx).Debug("unable to fetch container log stats", zap.String("container", c.GetMetadata().GetName()), zap.Error(err))
	}
	out.Logs = logs
	return out
}

// makeContainerCPUAndMemoryStats is one container's CPU, memory and swap,
// missing values read as zeros; usageNanoCores from the runtime or the
// cache, which it does not update. Matches the kubelet's
// makeContainerCPUAndMemoryStats as ListPodCPUAndMemoryStats calls it.
func (p *Provider) makeContainerCPUAndMemoryStats(ctx context.Context, s *runtimeapi.ContainerStats, c *runtimeapi.Container) *statsapi.ContainerStats {
	now := metav1.NewTime(p.opts.Now())
	orZero := func(v *runtimeapi.UInt64Value) *uint64 {
		if v == nil {
			return zero()
		}
		return u64(v)
	}
	out := &statsapi.ContainerStats{
		Name:      s.GetAttributes().GetMetadata().GetName(),
		StartTime: metav1.NewTime(time.Unix(0, c.GetCreatedAt())),
	}
	if cpu := s.GetCpu(); cpu != nil {
		out.CPU = &statsapi.CPUStats{
			Time:                 metav1.NewTime(time.Unix(0, cpu.GetTimestamp())),
			UsageNanoCores:       p.containerUsageNanoCores(ctx, s, false),
			UsageCoreNanoSeconds: orZero(cpu.GetUsageCoreNanoSeconds()),
			PSI:                  psiStats(cpu.GetPsi()),
		}
	} else {
		out.CPU = &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: zero(), UsageNanoCores: zero()}
	}
	if m := s.GetMemory(); m != nil {
		out.Memory = &statsapi.MemoryStats{
			Time:            metav1.NewTime(time.Unix(0, m.GetTimestamp())),
			AvailableBytes:  orZero(m.GetAvailableBytes()),
			UsageBytes:      orZero(m.GetUsageBytes()),
			WorkingSetBytes: orZero(m.GetWorkingSetBytes()),
			RSSBytes:        orZero(m.GetRssBytes()),
			PageFaults:      orZero(m.GetPageFaults()),
			MajorPageFaults: orZero(m.GetMajorPageFaults()),
			PSI:             psiStats(m.GetPsi()),
		}
	} else {
		out.Memory = &statsapi.MemoryStats{Time: now, AvailableBytes: zero(), UsageBytes: zero(), WorkingSetBytes: zero(),
			RSSBytes: zero(), PageFaults: zero(), MajorPageFaults: zero()}
	}
	if sw := s.GetSwap(); sw != nil {
		out.Swap = &statsapi.SwapStats{
			Time:               metav1.NewTime(time.Unix(0, sw.GetTimestamp())),
			SwapUsageBytes:     orZero(sw.GetSwapUsageBytes()),
			SwapAvailableBytes: orZero(sw.GetSwapAvailableBytes()),
		}
	} else {
		out.Swap = &statsapi.SwapStats{Time: now, SwapUsageBytes: zero(), SwapAvailableBytes: zero()}
	}
	return out
}

// addCRIPodStats fills a pod's own CPU, memory, IO pressure, network and
// process count from its sandbox's stats (the kubelet's addCRIPodCPUStats,
// addCRIPodMemoryStats, addCRIPodIOStats, addCRIPodNetworkStats,
// addCRIPodProcessStats).
func addCRIPodStats(ps *statsapi.PodStats, s *runtimeapi.PodSandboxStats) {
	addCRIPodCPUStats(ps, s)
	addCRIPodMemoryStats(ps, s)
	if io := s.GetLinux().GetIo(); io != nil {
		ps.IO = &statsapi.IOStats{Time: metav1.NewTime(time.Unix(0, io.GetTimestamp())), PSI: psiStats(io.GetPsi())}
	}
	if n := s.GetLinux().GetNetwork(); n != nil {
		ns := &statsapi.NetworkStats{
			Time:           metav1.NewTime(time.Unix(0, n.GetTimestamp())),
			InterfaceStats: interfaceStats(n.GetDefaultInterface()),
			Interfaces:     make([]statsapi.InterfaceStats, 0, len(n.GetInterfaces())),
		}
		for _, i := range n.GetInterfaces() {
			ns.Interfaces = append(ns.Interfaces, interfaceStats(i))
		}
		ps.Network = ns
	}
	if pr := s.GetLinux().GetProcess(); pr != nil {
		ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: u64(pr.GetProcessCount())}
	}
}

func addCRIPodCPUStats(ps *statsapi.PodStats, s *runtimeapi.PodSandboxStats) {
	if cpu := s.GetLinux().GetCpu(); cpu != nil {
		ps.CPU = &statsapi.CPUStats{
			Time:                 metav1.NewTime(time.Unix(0, cpu.GetTimestamp())),
			UsageNanoCores:       u64(cpu.GetUsageNanoCores()),
			UsageCoreNanoSeconds: u64(cpu.GetUsageCoreNanoSeconds()),
			PSI:                  psiStats(cpu.GetPsi()),
		}
	}
}

func addCRIPodMemoryStats(ps *statsapi.PodStats, s *runtimeapi.PodSandboxStats) {
	if m := s.GetLinux().GetMemory(); m != nil {
		ps.Memory = &statsapi.MemoryStats{
			Time:            metav1.NewTime(time.Unix(0, m.GetTimestamp())),
			AvailableBytes:  u64(m.GetAvailableBytes()),
			UsageBytes:      u64(m.GetUsageBytes()),
			WorkingSetBytes: u64(m.GetWorkingSetBytes()),
			RSSBytes:        u64(m.GetRssBytes()),
			PageFaults:      u64(m.GetPageFaults()),
			MajorPageFaults: u64(m.GetMajorPageFaults()),
			PSI:             psiStats(m.GetPsi()),
		}
	}
}

// psiStats is the runtime's pressure stall information in the Summary's
// form, nil when it reports none (cgroup v1, containerd 1.6); the kubelet's
// makePSIStats with KubeletPSI (GA in v1.36).
func psiStats(p *runtimeapi.PsiStats) *statsapi.PSIStats {
	if p == nil {
		return nil
	}
	data := func(d *runtimeapi.PsiData) statsapi.PSIData {
		if d == nil {
			return statsapi.PSIData{}
		}
		return statsapi.PSIData{Total: d.GetTotal(), Avg10: d.GetAvg10(), Avg60: d.GetAvg60(), Avg300: d.GetAvg300()}
	}
	return &statsapi.PSIStats{Full: data(p.GetFull()), Some: data(p.GetSome())}
}

func interfaceStats(i *runtimeapi.NetworkInterfaceUsage) statsapi.InterfaceStats {
	return statsapi.InterfaceStats{
		Name:     i.GetName(),
		RxBytes:  u64(i.GetRxBytes()),
		RxErrors: u64(i.GetRxErrors()),
		TxBytes:  u64(i.GetTxBytes()),
		TxErrors: u64(i.GetTxErrors()),
	}
}

// addPodCPUMemoryStats adds a container's CPU and memory to its pod's, for
// runtimes without pod sandbox stats (the summing half of the kubelet's
// addPodCPUMemoryStats).
func addPodCPUMemoryStats(ps *statsapi.PodStats, cs *statsapi.ContainerStats) {
	sum := func(a, b *uint64) *uint64 {
		v := deref(a) + deref(b)
		return &v
	}
	if cs.CPU != nil {
		if ps.CPU == nil {
			ps.CPU = &statsapi.CPUStats{}
		}
		ps.CPU.Time = cs.CPU.Time
		ps.CPU.UsageCoreNanoSeconds = sum(ps.CPU.UsageCoreNanoSeconds, cs.CPU.UsageCoreNanoSeconds)
		ps.CPU.UsageNanoCores = sum(ps.CPU.UsageNanoCores, cs.CPU.UsageNanoCores)
	}
	if cs.Memory != nil {
		if ps.Memory == nil {
			ps.Memory = &statsapi.MemoryStats{}
		}
		m := ps.Memory
		m.Time = cs.Memory.Time
		m.AvailableBytes = sum(m.AvailableBytes, cs.Memory.AvailableBytes)
		m.UsageBytes = sum(m.UsageBytes, cs.Memory.UsageBytes)
		m.WorkingSetBytes = sum(m.WorkingSetBytes, cs.Memory.WorkingSetBytes)
		m.RSSBytes = sum(m.RSSBytes, cs.Memory.RSSBytes)
		m.PageFaults = sum(m.PageFaults, cs.Memory.PageFaults)
		m.MajorPageFaults = sum(m.MajorPageFaults, cs.Memory.MajorPageFaults)
	}
}

func deref(v *uint64) uint64 {
	if v == nil {
		return 0
	}
	return *v
}

// addUsage is the kubelet's addUsage: nil plus x is x.
func addUsage(a, b *uint64) *uint64 {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	v := *a + *b
	return &v
}

func laterTime(a, b metav1.Time) metav1.Time {
	if b.After(a.Time) {
		return b
	}
	return a
}

func setFsCapacity(s *statsapi.FsStats, fi *fsInfo) {
	avail, capacity, inodes, free := fi.available, fi.capacity, fi.inodes, fi.inodesFree
	s.AvailableBytes, s.CapacityBytes, s.Inodes, s.InodesFree = &avail, &capacity, &inodes, &free
}

// rootFsStats is the node filesystem's capacity with no usage yet, the
// start of a sum (the kubelet's rootFsInfoToFsStats).
func rootFsStats(rootFs *fsInfo) *statsapi.FsStats {
	s := &statsapi.FsStats{Time: metav1.NewTime(rootFs.time)}
	setFsCapacity(s, rootFs)
	return s
}

// filesUsage sums the files directly in dir, on the node filesystem (the
// kubelet's fileMetricsByDir with metricsByPathToFsStats): a container's
// log directory, or a pod's.
func (p *Provider) filesUsage(dir string, rootFs *fsInfo) (*statsapi.FsStats, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := rootFsStats(rootFs)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, i, err := du(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out.UsedBytes = addUsage(out.UsedBytes, &b)
		out.InodesUsed = addUsage(out.InodesUsed, &i)
	}
	return out, nil
}

// makePodStorageStats fills a pod's volume stats and sums its ephemeral
// storage: its containers' writable layers and logs, its volumes on the
// node filesystem, the pod's own log files and its managed /etc/hosts.
// Matches the kubelet's makePodStorageStats and calcEphemeralStorage.
func (p *Provider) makePodStorageStats(ctx context.Context, ps *statsapi.PodStats, rootFs *fsInfo) {
	out := rootFsStats(rootFs)
	if p.opts.PodsDir != "" {
		vols := p.podVolumeStats(ctx, ps.PodRef.UID)
		ps.VolumeStats = vols.all
		for _, v := range vols.ephemeral {
			out.Time = laterTime(out.Time, v.Time)
			out.UsedBytes = addUsage(out.UsedBytes, v.UsedBytes)
			out.InodesUsed = addUsage(out.InodesUsed, v.InodesUsed)
		}
	}
	for _, c := range ps.Containers {
		if c.Rootfs == nil {
			continue
		}
		out.Time = laterTime(out.Time, c.Rootfs.Time)
		out.UsedBytes = addUsage(out.UsedBytes, c.Rootfs.UsedBytes)
		out.InodesUsed = addUsage(out.InodesUsed, c.Rootfs.InodesUsed)
		if c.Logs != nil {
			out.Time = laterTime(out.Time, c.Logs.Time)
			out.UsedBytes = addUsage(out.UsedBytes, c.Logs.UsedBytes)
			out.InodesUsed = addUsage(out.InodesUsed, c.Logs.InodesUsed)
		}
	}
	ref := ps.PodRef
	podLogs, err := p.filesUsage(kuberuntime.BuildPodLogsDirectory(p.opts.PodLogsRoot, ref.Namespace, ref.Name, ref.UID), rootFs)
	if err != nil {
		logctx.From(ctx).Debug("unable to fetch pod log stats", zap.String("pod", ref.Namespace+"/"+ref.Name), zap.Error(err))
	}
	if podLogs != nil {
		out.UsedBytes = addUsage(out.UsedBytes, podLogs.UsedBytes)
		out.InodesUsed = addUsage(out.InodesUsed, podLogs.InodesUsed)
	}
	if p.opts.PodsDir != "" {
		hosts := filepath.Join(p.opts.PodsDir, ref.UID, "etc-hosts")
		if b, i, err := du(hosts); err == nil {
			out.UsedBytes = addUsage(out.UsedBytes, &b)
			out.InodesUsed = addUsage(out.InodesUsed, &i)
		}
	}
	ps.EphemeralStorage = out
}
