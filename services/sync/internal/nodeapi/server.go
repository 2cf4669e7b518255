package nodeapi

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
)

// PodLister gives the pods sync runs, with their status
// (*podmanager.Manager). GetPodByFullName returns nil for an unknown pod.
type PodLister interface {
	GetPodByFullName(namespace, name string) *v1.Pod
	GetPodsWithStatus() []*v1.Pod
}

var _ PodLister = (*podmanager.Manager)(nil)

// Runtime is the part of CRI the node API uses
// (runtimeapi.RuntimeServiceClient). Errors are the runtime's gRPC statuses.
// Exec, Attach and PortForward return the runtime's one-time streaming URL,
// which the node API proxies the client's connection to.
type Runtime interface {
	ListPodSandbox(ctx context.Context, in *runtimeapi.ListPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error)
	ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error)
	ContainerStatus(ctx context.Context, in *runtimeapi.ContainerStatusRequest, opts ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error)
	ExecSync(ctx context.Context, in *runtimeapi.ExecSyncRequest, opts ...grpc.CallOption) (*runtimeapi.ExecSyncResponse, error)
	Exec(ctx context.Context, in *runtimeapi.ExecRequest, opts ...grpc.CallOption) (*runtimeapi.ExecResponse, error)
	Attach(ctx context.Context, in *runtimeapi.AttachRequest, opts ...grpc.CallOption) (*runtimeapi.AttachResponse, error)
	PortForward(ctx context.Context, in *runtimeapi.PortForwardRequest, opts ...grpc.CallOption) (*runtimeapi.PortForwardResponse, error)
	CheckpointContainer(ctx context.Context, in *runtimeapi.CheckpointContainerRequest, opts ...grpc.CallOption) (*runtimeapi.CheckpointContainerResponse, error)
}

var _ Runtime = runtimeapi.RuntimeServiceClient(nil)

// Options configure a Server.
type Options struct {
	// NodeName is the node whose subresources requests are authorized on.
	NodeName string
	Pods     PodLister
	Runtime  Runtime
	// Metrics is served on /metrics.
	Metrics prometheus.Gatherer
	// StreamMetrics counts the WebSocket streams; nil counts none.
	StreamMetrics *StreamMetrics
	// ProbeMetrics is served on /metrics/probes (the prober's counters,
	// prober.NewMetrics); nil serves none.
	ProbeMetrics prometheus.Gatherer
	// Stats serves /stats/summary and /metrics/resource; nil serves
	// neither.
	Stats SummaryProvider
	// CheckpointDir is where /checkpoint has the runtime write its archives
	// (the kubelet's <root-dir>/checkpoints, made by the caller); empty
	// serves no /checkpoint, as a kubelet without the ContainerCheckpoint
	// gate.
	CheckpointDir string
	// Auth authenticates and authorizes every request (BuildAuth).
	Auth Auth
	// Flags are sync's flags and their values, served on /flagz; nil
	// serves no /flagz, as a kubelet without them.
	Flags map[string]string
	// SystemLogDir is the directory /logs/ serves (the kubelet's
	// /var/log/ with enableSystemLogHandler, its default); empty answers
	// /logs/ with 405, as the kubelet with the handler off.
	SystemLogDir string
	// SystemLogQuery answers node log queries on /logs/ (the kubelet's
	// enableSystemLogQuery; systemLogHandler).
	SystemLogQuery bool
	// Healthy is the kubelet's syncloop health check for /healthz; nil is
	// always healthy.
	Healthy func() error
	// Now is the clock sinceSeconds counts back from (tests); nil is
	// time.Now.
	Now func() time.Time
}

// Server is the node API's http.Handler.
type Server struct {
	opts    Options
	handler http.Handler
}

var _ http.Handler = (*Server)(nil)

// New builds the node API: every route behind opts.Auth. Matches the
// kubelet's NewServer with its debugging handlers on (the kubelet's
// default), for the paths sync serves.
func New(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts}
	mux := http.NewServeMux()
	// paths are listed by /statusz.
	var paths []string
	handle := func(pattern string, h http.Handler) {
		mux.Handle(pattern, h)
		paths = append(paths, patternPath(pattern))
	}
	handle("GET "+healthzPath, http.HandlerFunc(s.getHealthz))
	handle("GET "+podsPath, http.HandlerFunc(s.getPods))
	handle("GET "+runningPodsPath, http.HandlerFunc(s.getRunningPods))
	handle("GET /containerLogs/{podNamespace}/{podID}/{containerName}", http.HandlerFunc(s.getContainerLogs))
	// The kubelet's streaming routes: GET and POST, with and without the
	// pod's UID.
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		handle(method+" /exec/{podNamespace}/{podID}/{containerName}", http.HandlerFunc(s.getExec))
		handle(method+" /exec/{podNamespace}/{podID}/{uid}/{containerName}", http.HandlerFunc(s.getExec))
		handle(method+" /attach/{podNamespace}/{podID}/{containerName}", http.HandlerFunc(s.getAttach))
		handle(method+" /attach/{podNamespace}/{podID}/{uid}/{containerName}", http.HandlerFunc(s.getAttach))
		handle(method+" /portForward/{podNamespace}/{podID}", http.HandlerFunc(s.getPortForward))
		handle(method+" /portForward/{podNamespace}/{podID}/{uid}", http.HandlerFunc(s.getPortForward))
	}
	handle("POST /run/{podNamespace}/{podID}/{containerName}", http.HandlerFunc(s.getRun))
	handle("POST /run/{podNamespace}/{podID}/{uid}/{containerName}", http.HandlerFunc(s.getRun))
	if opts.CheckpointDir != "" {
		handle("POST "+checkpointPath+"{podNamespace}/{podID}/{containerName}", http.HandlerFunc(s.checkpoint))
	}
	if opts.SystemLogDir != "" {
		handle("GET "+logsPath, systemLogHandler(opts.SystemLogDir, opts.SystemLogQuery))
	} else {
		handle(logsPath, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "logs endpoint is disabled.", http.StatusMethodNotAllowed)
		}))
	}
	handle("GET "+metricsPath, promhttp.HandlerFor(opts.Metrics, promhttp.HandlerOpts{}))
	if opts.ProbeMetrics != nil {
		handle("GET "+proberMetricsPath, promhttp.HandlerFor(opts.ProbeMetrics, promhttp.HandlerOpts{}))
	}
	if opts.Stats != nil {
		handle("GET "+statsSummaryPath, http.HandlerFunc(s.getStatsSummary))
		handle("POST "+statsSummaryPath, http.HandlerFunc(s.getStatsSummary))
		handle("GET "+resourceMetricsPath, http.HandlerFunc(s.getResourceMetrics))
	}
	// Last, so that /statusz lists every path (as the kubelet's).
	installZpages(mux, paths, opts.Flags)
	s.handler = withAuth(opts.Auth, opts.NodeName, mux)
	return s
}

// ServeHTTP puts a logger naming the request in its context, serves it
// and logs it (logRequest).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := logctx.From(r.Context()).With(zap.String("method", r.Method), zap.String("path", r.URL.Path))
	logRequest(log, s.handler, w, r.WithContext(logctx.With(r.Context(), log)))
}

// NewHTTPServer serves h over TLS (tlsConfig) on addr with the kubelet's
// server timeouts (ListenAndServeKubeletServer): a followed log or a stream
// may stay open for hours, headers are capped at 1 MiB.
func NewHTTPServer(addr string, h http.Handler, tlsConfig *tls.Config) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		TLSConfig:         tlsConfig,
		IdleTimeout:       90 * time.Second,
		ReadTimeout:       4 * 60 * time.Minute,
		WriteTimeout:      4 * 60 * time.Minute,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    1 << 20,
	}
}

// getHealthz answers "ok" while the sync loop is healthy. Matches the
// kubelet's healthz handler with its ping and syncloop checks.
func (s *Server) getHealthz(w http.ResponseWriter, r *http.Request) {
	if s.opts.Healthy != nil {
		if err := s.opts.Healthy(); err != nil {
			logctx.From(r.Context()).Info("healthz check failed", zap.Error(err))
			http.Error(w, "[-]syncloop failed: reason withheld\nhealthz check failed", http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write([]byte("ok"))
}

// writePodList writes pods as the kubelet's encodePods does: a v1 PodList
// in JSON.
func writePodList(w http.ResponseWriter, r *http.Request, pods []*v1.Pod) {
	list := v1.PodList{TypeMeta: metaPodList, Items: make([]v1.Pod, 0, len(pods))}
	for _, p := range pods {
		list.Items = append(list.Items, *p)
	}
	writeJSON(w, r, &list)
}

// writeJSON answers v in JSON, or 500 when it cannot be encoded.
func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(data); err != nil {
		logctx.From(r.Context()).Info("writing the response failed", zap.Error(err))
	}
}
