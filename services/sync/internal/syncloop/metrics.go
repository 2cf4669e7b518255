package syncloop

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/splitlet/splitlet/services/sync/internal/pleg"
)

// Metrics are the kubelet's metrics sync can produce, under the kubelet's
// names (pkg/kubelet/metrics), so dashboards built for the kubelet work.
type Metrics struct {
	PodStartDuration  prometheus.Histogram
	PodWorkerDuration *prometheus.HistogramVec
	// PLEG are the relist duration and the running pod and container
	// gauges.
	PLEG *pleg.Metrics
}

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
		PLEG: pleg.NewMetrics(reg),
	}
	if reg != nil {
		reg.MustRegister(m.PodStartDuration, m.PodWorkerDuration)
	}
	return m
}
