package stats

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/splitlet/splitlet/internal/logctx"
)

// volumeStatsPeriod is how long a pod's measured volume usage is served
// before it is measured again: the kubelet's default volumeStatsAggPeriod,
// since walking a large emptyDir on every request would cost too much.
const volumeStatsPeriod = time.Minute

// The volume plugin directories sync writes under
// <PodsDir>/<uid>/volumes/, as the kubelet names them (kuberuntime).
const (
	emptyDirPluginDir  = "kubernetes.io~empty-dir"
	configMapPluginDir = "kubernetes.io~configmap"
)

// podVolumes is one measurement of a pod's volumes.
type podVolumes struct {
	measured time.Time
	// all is every volume, by name; ephemeral the ones on the node
	// filesystem, which count towards the pod's ephemeral storage.
	all, ephemeral []statsapi.VolumeStats
}

// volumeCache keeps each pod's last volume measurement (the kubelet's
// fsResourceAnalyzer cache).
type volumeCache struct {
	mu   sync.Mutex
	pods map[string]podVolumes
}

// podVolumeStats returns the usage of every volume directory of the pod,
// <PodsDir>/<uid>/volumes/<plugin>/<name>: what du finds in it, and the
// capacity of the filesystem it is on (a memory-backed one's own). Local
// ephemeral volumes are the kubelet's IsLocalEphemeralVolume: emptyDir not
// in memory, and configMap. Matches the kubelet's volumeStatCalculator
// with MetricsDu, measured at most every volumeStatsPeriod.
func (p *Provider) podVolumeStats(ctx context.Context, uid string) podVolumes {
	now := p.opts.Now()
	p.volumes.mu.Lock()
	cached, ok := p.volumes.pods[uid]
	p.volumes.mu.Unlock()
	if ok && now.Sub(cached.measured) < volumeStatsPeriod {
		return cached
	}
	out := podVolumes{measured: now}
	root := filepath.Join(p.opts.PodsDir, uid, "volumes")
	plugins, err := os.ReadDir(root)
	if err != nil && !os.IsNotExist(err) {
		logctx.From(ctx).Debug("failed to list pod volumes", zap.String("podUID", uid), zap.Error(err))
	}
	for _, plugin := range plugins {
		if !plugin.IsDir() {
			continue
		}
		vols, err := os.ReadDir(filepath.Join(root, plugin.Name()))
		if err != nil {
			continue
		}
		for _, vol := range vols {
			if !vol.IsDir() {
				continue
			}
			dir := filepath.Join(root, plugin.Name(), vol.Name())
			fi, err := dirFsInfo(dir, now)
			if err != nil {
				continue
			}
			used, inodes, err := du(dir)
			if err != nil {
				logctx.From(ctx).Debug("failed to calculate volume metrics", zap.String("podUID", uid), zap.String("volumeName", vol.Name()), zap.Error(err))
				continue
			}
			vs := statsapi.VolumeStats{Name: vol.Name(), FsStats: statsapi.FsStats{Time: metav1.NewTime(now), UsedBytes: &used, InodesUsed: &inodes}}
			setFsCapacity(&vs.FsStats, &fi)
			out.all = append(out.all, vs)
			onNodeFs := plugin.Name() == configMapPluginDir ||
				plugin.Name() == emptyDirPluginDir && !isTmpfs(dir)
			if onNodeFs {
				out.ephemeral = append(out.ephemeral, vs)
			}
		}
	}
	sort.Slice(out.all, func(i, j int) bool { return out.all[i].Name < out.all[j].Name })
	p.volumes.mu.Lock()
	p.volumes.pods[uid] = out
	p.volumes.mu.Unlock()
	return out
}

// forgetVolumes drops the measurements of pods no longer listed.
func (p *Provider) forgetVolumes(listed map[string]bool) {
	p.volumes.mu.Lock()
	defer p.volumes.mu.Unlock()
	for uid := range p.volumes.pods {
		if !listed[uid] {
			delete(p.volumes.pods, uid)
		}
	}
}
