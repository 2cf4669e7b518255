package syncloop

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// Metrics are the kubelet's metrics sync can produce, under the kubelet's
// names (pkg/kubelet/metrics), so dashboards built for the kubelet work.
type Metrics struct {
	PodStartDuration   prometheus.Histogram
	PodWorkerDuration  *prometheus.HistogramVec
	RunningPods        prometheus.Gauge
	RunningContainers  *prometheus.GaugeVec
	PLEGRelistDuration prometheus.Histogram

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
		PodStartDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pod_start_duration_seconds",
			Help:    "Duration in seconds from sync seeing a pod for the first time to the pod starting to run",
			Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
		}),
		PodWorkerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pod_worker_duration_seconds",
			Help:    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
			Buckets: prometheus.DefBuckets,
		}, []string{"operation_type"}),
		RunningPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "running_pods",
			Help: "Number of pods that have a running pod sandbox",
		}),
		RunningContainers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "running_containers",
			Help: "Number of containers currently running",
		}, []string{"container_state"}),
		PLEGRelistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pleg_relist_duration_seconds",
			Help:    "Duration in seconds for relisting pods in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
	}
	if reg != nil {
		reg.MustRegister(m.PodStartDuration, m.PodWorkerDuration, &runningCollector{m}, m.PLEGRelistDuration)
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
