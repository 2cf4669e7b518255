package nodeapi

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/splitlet/splitlet/internal/logctx"
)

// The kubelet's resource metrics (pkg/kubelet/metrics/collectors/
// resource_metrics.go), with their names, labels and help texts; the help
// carries component-base's stability prefix as the kubelet writes it.
// Swap metrics are left out: CRI reports no swap here. The deprecated
// scrape_error is hidden in v1.36, as on a kubelet.
var (
	nodeCPUUsageDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemoryUsageDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"[STABLE] Current working set of the node in bytes", nil, nil)
	containerCPUUsageDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	containerMemoryUsageDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"[STABLE] Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	containerStartTimeDesc = prometheus.NewDesc("container_start_time_seconds",
		"[STABLE] Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	podCPUUsageDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	podMemoryUsageDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"[STABLE] Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	resourceScrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		"[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// resourceMetricsCollector exports the CPU and memory Summary as metrics on
// every scrape, so only live pods and containers appear. Matches the
// kubelet's resourceMetricsCollector: cumulative CPU in seconds and working
// sets, each stamped with the time of its sample; container start times
// without a stamp; resource_scrape_error 1 when no Summary could be built.
type resourceMetricsCollector struct {
	provider SummaryProvider
	// ctx is the scrape's request: its logger, its end.
	ctx context.Context
}

// getResourceMetrics answers /metrics/resource: the resource metrics in
// Prometheus' exposition formats. Matches the kubelet's handler on its own
// registry; the registry is made per scrape so the collector works in the
// request's context.
func (s *Server) getResourceMetrics(w http.ResponseWriter, r *http.Request) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(&resourceMetricsCollector{provider: s.opts.Stats, ctx: r.Context()})
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
}

var _ prometheus.Collector = (*resourceMetricsCollector)(nil)

func (c *resourceMetricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUUsageDesc, nodeMemoryUsageDesc, containerStartTimeDesc, containerCPUUsageDesc,
		containerMemoryUsageDesc, podCPUUsageDesc, podMemoryUsageDesc, resourceScrapeErrorDesc} {
		ch <- d
	}
}

func (c *resourceMetricsCollector) Collect(ch chan<- prometheus.Metric) {
	var errorCount float64
	defer func() {
		ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, errorCount)
	}()
	summary, err := c.provider.GetCPUAndMemoryStats(c.ctx)
	if err != nil {
		errorCount = 1
		logctx.From(c.ctx).Error("error getting summary for resourceMetric prometheus endpoint", zap.Error(err))
		return
	}
	cpuSeconds := func(s *statsapi.CPUStats) (float64, time.Time, bool) {
		if s == nil || s.UsageCoreNanoSeconds == nil {
			return 0, time.Time{}, false
		}
		return float64(*s.UsageCoreNanoSeconds) / float64(time.Second), s.Time.Time, true
	}
	workingSet := func(s *statsapi.MemoryStats) (float64, time.Time, bool) {
		if s == nil || s.WorkingSetBytes == nil {
			return 0, time.Time{}, false
		}
		return float64(*s.WorkingSetBytes), s.Time.Time, true
	}
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64, at time.Time, labels ...string) {
		ch <- prometheus.NewMetricWithTimestamp(at, prometheus.MustNewConstMetric(d, t, v, labels...))
	}
	if v, at, ok := cpuSeconds(summary.Node.CPU); ok {
		emit(nodeCPUUsageDesc, prometheus.CounterValue, v, at)
	}
	if v, at, ok := workingSet(summary.Node.Memory); ok {
		emit(nodeMemoryUsageDesc, prometheus.GaugeValue, v, at)
	}
	for _, pod := range summary.Pods {
		name, ns := pod.PodRef.Name, pod.PodRef.Namespace
		for _, cs := range pod.Containers {
			if cs.StartTime.Unix() > 0 {
				ch <- prometheus.MustNewConstMetric(containerStartTimeDesc, prometheus.GaugeValue,
					float64(cs.StartTime.UnixNano())/float64(time.Second), cs.Name, name, ns)
			}
			if v, at, ok := cpuSeconds(cs.CPU); ok {
				emit(containerCPUUsageDesc, prometheus.CounterValue, v, at, cs.Name, name, ns)
			}
			if v, at, ok := workingSet(cs.Memory); ok {
				emit(containerMemoryUsageDesc, prometheus.GaugeValue, v, at, cs.Name, name, ns)
			}
		}
		if v, at, ok := cpuSeconds(pod.CPU); ok {
			emit(podCPUUsageDesc, prometheus.CounterValue, v, at, name, ns)
		}
		if v, at, ok := workingSet(pod.Memory); ok {
			emit(podMemoryUsageDesc, prometheus.GaugeValue, v, at, name, ns)
		}
	}
}
