package podresources

import "github.com/prometheus/client_golang/prometheus"

// serverAPIVersion labels the v1 server's calls, as the kubelet's.
const serverAPIVersion = "v1"

// Metrics are the kubelet's pod-resources counters (pkg/kubelet/metrics),
// under its names and with its server_api_version label, so that
// dashboards built for the kubelet work. A nil *Metrics counts nothing.
type Metrics struct {
	requests             *prometheus.CounterVec
	list                 *prometheus.CounterVec
	getAllocatable       *prometheus.CounterVec
	get                  *prometheus.CounterVec
	listErrors           *prometheus.CounterVec
	getAllocatableErrors *prometheus.CounterVec
	getErrors            *prometheus.CounterVec
}

// NewMetrics creates the counters and registers them with reg (when not
// nil). List and GetAllocatableResources never fail, so their error
// counters stay empty, as the kubelet's v1 server leaves them.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "kubelet", Name: name, Help: help}, []string{"server_api_version"})
	}
	m := &Metrics{
		requests:             counter("pod_resources_endpoint_requests_total", "Cumulative number of requests to the PodResource endpoint. Broken down by server api version."),
		list:                 counter("pod_resources_endpoint_requests_list", "Number of requests to the PodResource List endpoint. Broken down by server api version."),
		getAllocatable:       counter("pod_resources_endpoint_requests_get_allocatable", "Number of requests to the PodResource GetAllocatableResources endpoint. Broken down by server api version."),
		get:                  counter("pod_resources_endpoint_requests_get", "Number of requests to the PodResource Get endpoint. Broken down by server api version."),
		listErrors:           counter("pod_resources_endpoint_errors_list", "Number of requests to the PodResource List endpoint which returned error. Broken down by server api version."),
		getAllocatableErrors: counter("pod_resources_endpoint_errors_get_allocatable", "Number of requests to the PodResource GetAllocatableResources endpoint which returned error. Broken down by server api version."),
		getErrors:            counter("pod_resources_endpoint_errors_get", "Number of requests to the PodResource Get endpoint which returned error. Broken down by server api version."),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.list, m.getAllocatable, m.get, m.listErrors, m.getAllocatableErrors, m.getErrors)
	}
	return m
}

// call counts one call of the endpoint counted by c, and the total, as
// each of the kubelet's handlers does first.
func (m *Metrics) call(c *prometheus.CounterVec) {
	m.requests.WithLabelValues(serverAPIVersion).Inc()
	c.WithLabelValues(serverAPIVersion).Inc()
}

func (m *Metrics) countList() {
	if m != nil {
		m.call(m.list)
	}
}

func (m *Metrics) countGetAllocatable() {
	if m != nil {
		m.call(m.getAllocatable)
	}
}

func (m *Metrics) countGet() {
	if m != nil {
		m.call(m.get)
	}
}

func (m *Metrics) countGetError() {
	if m != nil {
		m.getErrors.WithLabelValues(serverAPIVersion).Inc()
	}
}
