package pleg

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// Metrics are the kubelet's metrics the PLEG sets, under the kubelet's
// names (pkg/kubelet/metrics): the relist duration and the running pod and
// container gauges.
type Metrics struct {
	RelistDuration    prometheus.Histogram
	RunningPods       prometheus.Gauge
	RunningContainers *prometheus.GaugeVec

	// mu guards runningAt, changed and refresh: when the running gauges
	// were last set, whether a container event came since, and what a
	// scrape calls when either says the gauges may be wrong (nil:
	// nothing, the gauges are served as they are).
	mu        sync.Mutex
	runningAt time.Time
	changed   bool
	refresh   func()
}

// runningMaxAge is how old the running pod and container gauges may be when
// scraped before they are listed again: the relist sets them every second
// on a runtime without events, but only every few minutes while events
// flow (the kubelet's evented PLEG leaves them that stale).
const runningMaxAge = 2 * time.Second

// NewMetrics creates the metrics and registers them with reg (when not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		RunningPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "running_pods",
			Help: "Number of pods that have a running pod sandbox",
		}),
		RunningContainers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "running_containers",
			Help: "Number of containers currently running",
		}, []string{"container_state"}),
		RelistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pleg_relist_duration_seconds",
			Help:    "Duration in seconds for relisting pods in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
	}
	if reg != nil {
		reg.MustRegister(&runningCollector{m}, m.RelistDuration)
	}
	return m
}

// setRunning sets the running pod and container gauges from a node-wide
// listing, counting only sandboxes and containers of pods (those with a pod
// UID label). Matches the kubelet's GenericPLEG updateRunningPodAndContainerMetrics.
func (m *Metrics) setRunning(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) {
	pods := 0
	for _, sb := range sandboxes {
		if sb.GetLabels()[kuberuntime.KubernetesPodUIDLabel] != "" && sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			pods++
		}
	}
	byState := map[string]int{}
	for _, c := range containers {
		if c.GetLabels()[kuberuntime.KubernetesPodUIDLabel] != "" {
			byState[containerStateLabel(c.GetState())]++
		}
	}
	m.RunningPods.Set(float64(pods))
	for _, s := range []string{"created", "running", "exited", "unknown"} {
		m.RunningContainers.WithLabelValues(s).Set(float64(byState[s]))
	}
	m.mu.Lock()
	m.runningAt, m.changed = time.Now(), false
	m.mu.Unlock()
}

func containerStateLabel(s runtimeapi.ContainerState) string {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return "created"
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return "running"
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return "exited"
	}
	return "unknown"
}

// runtimeChanged records that the runtime reported a change the running
// gauges may not show.
func (m *Metrics) runtimeChanged() {
	m.mu.Lock()
	m.changed = true
	m.mu.Unlock()
}

// setRefresh makes a scrape of gauges older than runningMaxAge, or set
// before a container event, call f first.
func (m *Metrics) setRefresh(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refresh = f
}

// runningCollector serves the running pod and container gauges, refreshing
// them first when they are stale.
type runningCollector struct{ m *Metrics }

var _ prometheus.Collector = (*runningCollector)(nil)

func (c *runningCollector) Describe(ch chan<- *prometheus.Desc) {
	c.m.RunningPods.Describe(ch)
	c.m.RunningContainers.Describe(ch)
}

func (c *runningCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	refresh := c.m.refresh
	stale := c.m.changed || time.Since(c.m.runningAt) > runningMaxAge
	c.m.mu.Unlock()
	if refresh != nil && stale {
		refresh()
	}
	c.m.RunningPods.Collect(ch)
	c.m.RunningContainers.Collect(ch)
}
