package nodeapi

import "github.com/prometheus/client_golang/prometheus"

// StreamMetrics are the kubelet's counters of the node API's streams
// (pkg/kubelet/server/metrics).
type StreamMetrics struct {
	websocket *prometheus.CounterVec
}

// NewStreamMetrics registers the counters with reg.
func NewStreamMetrics(reg prometheus.Registerer) *StreamMetrics {
	m := &StreamMetrics{websocket: prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "kubelet", Name: "websocket_streaming_requests_total",
		Help: "Total number of WebSocket streaming requests (exec/attach/portforward) received by the kubelet.",
	}, []string{"subresource"})}
	reg.MustRegister(m.websocket)
	return m
}

// countWebSocket counts a WebSocket stream of subresource the node API
// translates for the runtime (IncWebSocketStreamingRequest); nil counts
// nothing.
func (m *StreamMetrics) countWebSocket(subresource string) {
	if m != nil {
		m.websocket.WithLabelValues(subresource).Inc()
	}
}
