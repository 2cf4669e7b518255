package stats

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/splitlet/splitlet/internal/logctx"
)

// HousekeepingInterval is how often Run samples every container's CPU: the
// kubelet's eviction manager's monitoring interval, the period at which the
// kubelet calls the summary provider with updateStats set.
const HousekeepingInterval = 10 * time.Second

// Options configure a Provider.
type Options struct {
	NodeName string
	Runtime  Runtime
	Images   ImageService
	Host     Host
	// RootDir is sync's state directory, whose filesystem is the node's
	// (the kubelet's root directory, cAdvisor's RootFsInfo).
	RootDir string
	// PodLogsRoot is where the runtime writes container logs
	// (/var/log/pods).
	PodLogsRoot string
	// PodsDir holds the pods' directories (<uid>/etc-hosts,
	// <uid>/volumes/<plugin>/<name>); empty leaves out volume stats and
	// the managed /etc/hosts.
	PodsDir string
	// PodCgroupRoot is the cgroup of every pod, the "pods" system
	// container (the kubelet's GetPodCgroupRoot, /kubepods for cgroupfs);
	// empty leaves it out.
	PodCgroupRoot string
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Provider builds the kubelet's stats Summary from CRI and the machine.
// It is safe for concurrent use.
type Provider struct {
	opts     Options
	cpuCache cpuUsageCache
	volumes  volumeCache
	// started is when sync started, the "kubelet" system container's
	// start time.
	started time.Time
}

// New returns a Provider.
func New(opts Options) *Provider {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Provider{
		opts:     opts,
		cpuCache: cpuUsageCache{records: map[string]*cpuUsageRecord{}},
		volumes:  volumeCache{pods: map[string]podVolumes{}},
		started:  opts.Now(),
	}
}

// cgroupKey keys a cgroup's CPU samples in the usageNanoCores cache beside
// container IDs, which are hex and never contain a colon.
func cgroupKey(name string) string { return "cgroup:" + name }

// cgroupStats reads a cgroup's CPU and memory as the kubelet's
// cadvisorInfoToCPUandMemoryStats converts cAdvisor's: usageNanoCores from
// the previous sample (cAdvisor's CpuInst), updated when update is set,
// availableBytes as the limit minus the working set when there is a limit.
func (p *Provider) cgroupStats(ctx context.Context, name string, update bool) (*statsapi.CPUStats, *statsapi.MemoryStats, *statsapi.IOStats, error) {
	s, err := p.opts.Host.cgroup(name, p.opts.Now())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("failed to get cgroup stats for %q: %w", name, err)
	}
	t := metav1.NewTime(s.time)
	// KubeletPSI: the node's and the pods cgroup's pressure, zeros where
	// the cgroup has none, as the kubelet's cadvisorPSIToStatsPSI gives.
	cpu := &statsapi.CPUStats{Time: t, UsageCoreNanoSeconds: &s.cpuNanoSeconds, PSI: &s.cpuPSI}
	if update {
		rate, err := p.cpuCache.update(cgroupKey(name), s.time.UnixNano(), s.cpuNanoSeconds)
		if err != nil {
			logctx.From(ctx).Warn("failed updating cpu usage nano core", zap.Error(err))
		}
		cpu.UsageNanoCores = rate
	} else {
		cpu.UsageNanoCores = p.cpuCache.get(cgroupKey(name))
	}
	mem := &statsapi.MemoryStats{
		Time:            t,
		UsageBytes:      &s.usageBytes,
		WorkingSetBytes: &s.workingSet,
		RSSBytes:        &s.rssBytes,
		PageFaults:      &s.pageFaults,
		MajorPageFaults: &s.majorFaults,
		PSI:             &s.memoryPSI,
	}
	if s.limitBytes > 0 {
		avail := subFloor(s.limitBytes, s.workingSet)
		mem.AvailableBytes = &avail
	}
	return cpu, mem, &statsapi.IOStats{Time: t, PSI: &s.ioPSI}, nil
}

// systemContainers is the "pods" system container, the only one a kubelet
// reports by default (its own, the runtime's and misc need cgroups named
// in its configuration). Matches the kubelet's GetSystemContainersStats;
// a cgroup that cannot be read is left out, as there.
func (p *Provider) systemContainers(ctx context.Context, update bool) []statsapi.ContainerStats {
	if p.opts.PodCgroupRoot == "" {
		return nil
	}
	cpu, mem, io, err := p.cgroupStats(ctx, p.opts.PodCgroupRoot, update)
	if err != nil {
		logctx.From(ctx).Debug("failed to get system container stats", zap.String("containerName", p.opts.PodCgroupRoot), zap.Error(err))
		return nil
	}
	return []statsapi.ContainerStats{{Name: statsapi.SystemContainerPods, StartTime: metav1.NewTime(p.started), CPU: cpu, Memory: mem, IO: io}}
}

// Get returns the whole Summary: the node (CPU and memory of the root
// cgroup, the node and image filesystems, pid limits, the pods cgroup)
// and every pod. updateStats feeds this sample to the usageNanoCores
// cache, as only the kubelet's periodic caller does; a request to
// /stats/summary reads the cache. Matches the kubelet's
// summaryProviderImpl.Get; the image filesystem is left out, not an
// error, when the runtime cannot say.
func (p *Provider) Get(ctx context.Context, updateStats bool) (*statsapi.Summary, error) {
	cpu, mem, io, err := p.cgroupStats(ctx, "/", updateStats)
	if err != nil {
		return nil, fmt.Errorf("failed to get root cgroup stats: %w", err)
	}
	rootFs, err := dirFsInfo(p.opts.RootDir, cpu.Time.Time)
	if err != nil {
		return nil, fmt.Errorf("failed to get rootFs stats: %w", err)
	}
	pods, err := p.listPodStats(ctx, updateStats, &rootFs)
	if err != nil {
		return nil, fmt.Errorf("failed to list pod stats: %w", err)
	}
	boot, err := p.opts.Host.bootTime()
	if err != nil {
		logctx.From(ctx).Debug("boot time unknown: the node's start time reads zero", zap.Error(err))
	}
	used := rootFs.inodes - rootFs.inodesFree
	fs := rootFsStats(&rootFs)
	fs.UsedBytes, fs.InodesUsed = &rootFs.usage, &used
	node := statsapi.NodeStats{
		NodeName:         p.opts.NodeName,
		StartTime:        metav1.NewTime(boot),
		CPU:              cpu,
		Memory:           mem,
		IO:               io,
		Fs:               fs,
		SystemContainers: p.systemContainers(ctx, updateStats),
	}
	if imageFs, err := p.ImageFsStats(ctx); err != nil {
		logctx.From(ctx).Debug("image filesystem stats unavailable", zap.Error(err))
	} else {
		node.Runtime = &statsapi.RuntimeStats{ImageFs: imageFs, ContainerFs: imageFs}
	}
	if maxPID, procs, err := p.opts.Host.rlimit(); err == nil {
		node.Rlimit = &statsapi.RlimitStats{Time: metav1.NewTime(p.opts.Now()), MaxPID: &maxPID, NumOfRunningProcesses: &procs}
	}
	return &statsapi.Summary{Node: node, Pods: nonNil(pods)}, nil
}

// GetCPUAndMemoryStats returns the Summary with CPU and memory only, what
// only_cpu_and_memory=true and /metrics/resource serve; it reads the
// usageNanoCores cache without updating it. Matches the kubelet's
// summaryProviderImpl.GetCPUAndMemoryStats.
func (p *Provider) GetCPUAndMemoryStats(ctx context.Context) (*statsapi.Summary, error) {
	cpu, mem, _, err := p.cgroupStats(ctx, "/", false)
	if err != nil {
		return nil, fmt.Errorf("failed to get root cgroup stats: %w", err)
	}
	pods, err := p.listPodCPUAndMemoryStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to list pod stats: %w", err)
	}
	boot, _ := p.opts.Host.bootTime()
	return &statsapi.Summary{
		Node: statsapi.NodeStats{
			NodeName:         p.opts.NodeName,
			StartTime:        metav1.NewTime(boot),
			CPU:              cpu,
			Memory:           mem,
			SystemContainers: p.systemContainers(ctx, false),
		},
		Pods: nonNil(pods),
	}, nil
}

// nonNil keeps "pods": [] in JSON for a node without pods, as the kubelet
// writes it.
func nonNil(pods []statsapi.PodStats) []statsapi.PodStats {
	if pods == nil {
		return []statsapi.PodStats{}
	}
	return pods
}

// ImageFsStats is the runtime's first image filesystem, with the capacity
// of the filesystem it names when this node can see it. Matches the
// kubelet's criStatsProvider.ImageFsStats (the container filesystem is the
// same one); the image garbage collector reads it too.
func (p *Provider) ImageFsStats(ctx context.Context) (*statsapi.FsStats, error) {
	if p.opts.Images == nil {
		return nil, fmt.Errorf("no image service")
	}
	resp, err := p.opts.Images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, err
	}
	if len(resp.GetImageFilesystems()) == 0 {
		return nil, fmt.Errorf("imageFs information is unavailable")
	}
	fs := resp.GetImageFilesystems()[0]
	out := &statsapi.FsStats{
		Time:       metav1.NewTime(time.Unix(0, fs.GetTimestamp())),
		UsedBytes:  u64(fs.GetUsedBytes()),
		InodesUsed: u64(fs.GetInodesUsed()),
	}
	if mp := fs.GetFsId().GetMountpoint(); mp != "" {
		if fi, err := dirFsInfo(mp, p.opts.Now()); err == nil {
			setFsCapacity(out, &fi)
		}
	}
	return out, nil
}

// Run samples every container's and the node's CPU every
// HousekeepingInterval until ctx ends, so usageNanoCores is there for
// runtimes that do not fill it: what the kubelet's eviction manager does
// for its summary provider (synchronize -> Get(ctx, true)).
func (p *Provider) Run(ctx context.Context) {
	t := time.NewTicker(HousekeepingInterval)
	defer t.Stop()
	for {
		if _, err := p.Get(ctx, true); err != nil && ctx.Err() == nil {
			logctx.From(ctx).Debug("stats housekeeping failed", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
