package streamproxy

import "github.com/prometheus/client_golang/prometheus"

// metrics count the streams the gateway proxies, beside its CRI operation
// metrics (splitlet_gateway_*).
type metrics struct {
	streams     *prometheus.CounterVec
	active      *prometheus.GaugeVec
	duration    *prometheus.HistogramVec
	outstanding prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		streams: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "splitlet", Subsystem: "gateway", Name: "streams_total",
			Help: "Streams (exec, attach, portforward) asked of the gateway's streaming proxy, by kind and result: " +
				"proxied, error (the runtime refused or could not be reached) or not_found (unknown, spent or expired URL).",
		}, []string{"kind", "result"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "splitlet", Subsystem: "gateway", Name: "streams_active",
			Help: "Streams open through the gateway's streaming proxy, by kind.",
		}, []string{"kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "splitlet", Subsystem: "gateway", Name: "stream_duration_seconds",
			Help:    "How long streams through the gateway's streaming proxy stayed open, by kind.",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10), // 10 ms to ~43 min
		}, []string{"kind"}),
		outstanding: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "splitlet", Subsystem: "gateway", Name: "stream_urls_outstanding",
			Help: "Streaming URLs issued and not yet used or found expired.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.streams, m.active, m.duration, m.outstanding)
	}
	return m
}
