package cm

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/cgroups"
	cgroupmanager "github.com/opencontainers/cgroups/manager"
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/splitlet/splitlet/internal/qos"
)

// QOSUpdatePeriod is how often the QoS cgroups are set again from the
// active pods: the kubelet's periodicQOSCgroupUpdateInterval.
const QOSUpdatePeriod = time.Minute

// QOSRoot is the cgroup of the QoS-level cgroups on the cgroupfs driver:
// Guaranteed pods' cgroups sit directly under it, the others' under its
// burstable and besteffort children.
const QOSRoot = "/kubepods"

// unboundedHugePages is the kubelet's setHugePagesUnbounded: every huge
// page size is effectively unlimited at the QoS level, so that the pods'
// own limits are what counts.
const unboundedHugePages = int64(1 << 62)

// QOSContainerManager keeps the QoS-level cgroups, the kubelet's
// qosContainerManagerImpl without QOSReserved and MemoryQoS (both off by
// default): BestEffort pods share the minimum CPU shares between them, and
// Burstable pods the shares of their summed CPU requests, so that under
// contention Guaranteed and Burstable pods get the CPU they asked for
// before BestEffort ones get any. It is safe for concurrent use.
type QOSContainerManager struct {
	mu         sync.Mutex
	root       string
	activePods func() []*v1.Pod
}

// NewQOSContainerManager returns a manager of the QoS cgroups under root
// (QOSRoot), sizing the Burstable tier from activePods (the sync loop's,
// the kubelet's ActivePodsFunc).
func NewQOSContainerManager(root string, activePods func() []*v1.Pod) *QOSContainerManager {
	return &QOSContainerManager{root: root, activePods: activePods}
}

func (m *QOSContainerManager) burstable() string  { return path.Join(m.root, "burstable") }
func (m *QOSContainerManager) bestEffort() string { return path.Join(m.root, "besteffort") }

// Start creates the Burstable and BestEffort cgroups (the BestEffort one
// with the minimum shares, huge pages unbounded in both) or, when they
// exist, sets them so: the kubelet's qosContainerManagerImpl.Start.
func (m *QOSContainerManager) Start() error {
	minimum := uint64(MinShares)
	huge := hugePagesUnbounded()
	return setQOSCgroups(true, map[string]ResourceConfig{
		m.burstable():  {HugePageLimit: huge},
		m.bestEffort(): {CPUShares: &minimum, HugePageLimit: huge},
	})
}

// Update sets the QoS cgroups from the active pods: the BestEffort tier's
// minimum shares, the Burstable tier's shares from its pods' summed CPU
// requests (pod-level requests where set), and huge pages unbounded in
// all three. The kubelet's UpdateCgroups, which it calls before it makes a
// pod's cgroup and every minute.
func (m *QOSContainerManager) Update() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var burstableMilli int64
	for _, pod := range m.activePods() {
		if qos.GetPodQOS(pod) != v1.PodQOSBurstable {
			continue
		}
		if q, ok := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[v1.ResourceCPU]; ok {
			burstableMilli += q.MilliValue()
		}
	}
	minimum, burstable := uint64(MinShares), uint64(MilliCPUToShares(burstableMilli))
	huge := hugePagesUnbounded()
	return setQOSCgroups(false, map[string]ResourceConfig{
		m.root:         {HugePageLimit: huge},
		m.burstable():  {CPUShares: &burstable, HugePageLimit: huge},
		m.bestEffort(): {CPUShares: &minimum, HugePageLimit: huge},
	})
}

// setQOSCgroups writes each cgroup's configuration, creating the cgroup
// first when create is set and it does not exist.
func setQOSCgroups(create bool, tiers map[string]ResourceConfig) error {
	for name, cfg := range tiers {
		res := toResources(cfg)
		mgr, err := cgroupmanager.New(&cgroups.Cgroup{Path: name, Resources: res})
		if err != nil {
			return fmt.Errorf("QoS cgroup %s: %w", name, err)
		}
		if create && !cgroupExists(mgr) {
			if err := mgr.Apply(-1); err != nil {
				return fmt.Errorf("failed to create top level QoS cgroup %s: %w", name, err)
			}
		}
		if err := mgr.Set(res); err != nil {
			return fmt.Errorf("failed to update QoS cgroup %s: %w", name, err)
		}
	}
	return nil
}

// Run calls Update every QOSUpdatePeriod until ctx ends, logging failures
// through logf.
func (m *QOSContainerManager) Run(ctx context.Context, logf func(error)) {
	t := time.NewTicker(QOSUpdatePeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := m.Update(); err != nil {
				logf(err)
			}
		}
	}
}

func hugePagesUnbounded() map[int64]int64 {
	out := map[int64]int64{}
	for _, name := range cgroups.HugePageSizes() {
		if size, err := hugePageSizeBytes(name); err == nil {
			out[size] = unboundedHugePages
		}
	}
	return out
}

// hugePageSizeBytes is hugePageSizeName's inverse: "2MB" is 2<<20.
func hugePageSizeBytes(name string) (int64, error) {
	units := map[string]int64{"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40, "PB": 1 << 50}
	for suffix, mult := range units {
		if n, ok := strings.CutSuffix(name, suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("%q: %w", name, errNotHugePageSize)
			}
			return v * mult, nil
		}
	}
	return 0, fmt.Errorf("%q: %w", name, errNotHugePageSize)
}
