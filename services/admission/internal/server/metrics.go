package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Values of the result label of admission_admit_total.
const (
	resultAdmitted = "admitted"
	resultRejected = "rejected"
	// resultPreempt is a rejection that names victims: the pod is admitted
	// once they are stopped.
	resultPreempt = "preempt"
	// resultInvalid is a request that could not be decoded.
	resultInvalid = "invalid"
)

// metrics are the admission service's Prometheus metrics. Each Service has
// its own registry so tests can run several in one process.
type metrics struct {
	registry *prometheus.Registry
	admits   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		admits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "admission_admit_total",
			Help: "Admit calls by result (admitted, rejected, preempt, invalid) and rejection reason " +
				"(the kubelet's, e.g. OutOfmemory; empty when admitted).",
		}, []string{"result", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "admission_admit_duration_seconds",
			Help: "Time to decide an Admit call, decoding included, by result.",
			// A decision against a hundred pods takes tens of
			// microseconds; an out-of-process plugin adds a round trip.
			// 25µs to ~10s.
			Buckets: prometheus.ExponentialBuckets(0.000025, 2.5, 15),
		}, []string{"result"}),
	}
	m.registry.MustRegister(m.admits, m.duration,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observeAdmit(result, reason string, d time.Duration) {
	m.admits.WithLabelValues(result, reason).Inc()
	m.duration.WithLabelValues(result).Observe(d.Seconds())
}
