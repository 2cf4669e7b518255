package prober

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// Metrics are the kubelet's prober metrics, which its node API serves on
// /metrics/probes: prober_probe_total by probe type, result, container and
// pod, and prober_probe_duration_seconds.
type Metrics struct {
	results  *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the prober metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "prober", Name: "probe_total",
			Help: "Cumulative number of a liveness, readiness or startup probe for a container by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "prober", Name: "probe_duration_seconds",
			Help:    "Duration in seconds for a probe response.",
			Buckets: prometheus.DefBuckets,
		}, []string{"probe_type", "container", "pod", "namespace"}),
	}
	reg.MustRegister(m.results, m.duration)
	return m
}

// The kubelet's result label values.
const (
	resultSuccessful = "successful"
	resultFailed     = "failed"
	resultUnknown    = "unknown"
)

// observe counts one probe of w that ran since start. As the kubelet's
// worker.doProbe, the duration of failed probes is not observed.
func (m *Metrics) observe(w *worker, result kuberuntime.ProbeResult, start time.Time) {
	if m == nil {
		return
	}
	label := resultUnknown
	switch result {
	case kuberuntime.ProbeSuccess:
		label = resultSuccessful
	case kuberuntime.ProbeFailure:
		label = resultFailed
	}
	pt, c, pod, ns := w.probeType.String(), w.container.Name, w.pod.Name, w.pod.Namespace
	m.results.WithLabelValues(pt, label, c, pod, ns, string(w.pod.UID)).Inc()
	if label != resultFailed {
		m.duration.WithLabelValues(pt, c, pod, ns).Observe(time.Since(start).Seconds())
	}
}

// forget drops w's series when it stops, as the kubelet's worker.run does
// on exit, so the metrics of deleted pods do not pile up.
func (m *Metrics) forget(w *worker) {
	if m == nil {
		return
	}
	pt, c, pod, ns := w.probeType.String(), w.container.Name, w.pod.Name, w.pod.Namespace
	for _, r := range []string{resultSuccessful, resultFailed, resultUnknown} {
		m.results.DeleteLabelValues(pt, r, c, pod, ns, string(w.pod.UID))
	}
	m.duration.DeleteLabelValues(pt, c, pod, ns)
}
