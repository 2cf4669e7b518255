package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc/codes"
)

// metrics are the gateway's per-RPC Prometheus metrics, modelled on the
// kubelet's kubelet_runtime_operations_* family (pkg/kubelet/metrics). Each
// server has its own registry so tests and benchmarks can run several servers
// in one process.
type metrics struct {
	registry   *prometheus.Registry
	operations *prometheus.CounterVec
	errors     *prometheus.CounterVec
	duration   *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "splitlet", Subsystem: "gateway", Name: "runtime_operations_total",
			Help: "Cumulative number of CRI operations served, by operation type and gRPC code.",
		}, []string{"operation_type", "code"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "splitlet", Subsystem: "gateway", Name: "runtime_operations_errors_total",
			Help: "Cumulative number of CRI operations that returned an error, by operation type.",
		}, []string{"operation_type"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "splitlet", Subsystem: "gateway", Name: "runtime_operations_duration_seconds",
			Help: "Duration in seconds of CRI operations, by operation type.",
			// The kubelet starts at 5ms; the gateway's own cost is tens of
			// microseconds, so the buckets start at 100µs and reach ~93s.
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 16),
		}, []string{"operation_type"}),
	}
	m.registry.MustRegister(m.operations, m.errors, m.duration,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// okCode is the code label of successful calls.
var okCode = codes.OK.String()

// observe counts one call of meth. Successes, nearly every call, use the
// method's cached collectors; failures look their labels up.
func (m *metrics) observe(meth *method, code codes.Code, d time.Duration) {
	if code == codes.OK {
		c := meth.okCollectors(m)
		c.operations.Inc()
		c.duration.Observe(d.Seconds())
		return
	}
	m.operations.WithLabelValues(meth.op, code.String()).Inc()
	m.errors.WithLabelValues(meth.op).Inc()
	m.duration.WithLabelValues(meth.op).Observe(d.Seconds())
}
