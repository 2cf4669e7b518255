package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/tracing"
	"github.com/splitlet/splitlet/services/admission/eviction"
	"github.com/splitlet/splitlet/services/admission/internal/admitter"
	"github.com/splitlet/splitlet/services/admission/internal/config"
	"github.com/splitlet/splitlet/services/admission/internal/pluginhost"
	"github.com/splitlet/splitlet/services/admission/internal/podcache"
	"github.com/splitlet/splitlet/services/admission/internal/podstats"
	"github.com/splitlet/splitlet/services/admission/nodeinfo"
)

// Run is the whole splitlet-admission process: it builds the node, the
// eviction manager and the plugin chain from cfg, serves until ctx is done,
// then drains (health NOT_SERVING, watch streams ended) and shuts down within
// cfg.ShutdownTimeout. The logger comes from ctx (logctx). The address
// actually listened on is logged as "serving" with field "address", which
// matters when cfg.Listen has port 0.
func Run(ctx context.Context, cfg config.Config) (retErr error) {
	log := logctx.From(ctx)

	nc, err := cfg.NodeinfoConfig()
	if err != nil {
		return err
	}
	node, err := nodeinfo.Build(nc)
	if err != nil {
		return fmt.Errorf("building the node: %w", err)
	}

	var stats eviction.PodStatsProvider
	var runtimeFeatures featureSource
	if cfg.GatewayEndpoint != "" {
		cri, err := podstats.Dial(cfg.GatewayEndpoint, tracing.GRPCDialOptions()...)
		if err != nil {
			return fmt.Errorf("gatewayEndpoint: %w", err)
		}
		defer cri.Close()
		stats = cri
		if cfg.Node.SupplementalGroupsPolicy == nil {
			runtimeFeatures = cri
		}
	} else {
		log.Info("no gatewayEndpoint: eviction ranks pods without their usage")
	}
	mgr, err := newEvictionManager(cfg, stats)
	if err != nil {
		return err
	}

	var pcfg *pluginhost.Config
	if cfg.PluginsConfig != "" {
		if pcfg, err = pluginhost.LoadConfig(cfg.PluginsConfig); err != nil {
			return fmt.Errorf("pluginsConfig: %w", err)
		}
	}
	guard, err := cfg.Listen.Authenticator()
	if err != nil {
		return err
	}
	a, err := newAdmission(ctx, node, mgr, pcfg, Options{Logger: log, Profiling: cfg.Profiling, Guard: guard})
	if err != nil {
		return err
	}
	// The host always kills its plugins, whatever way Run ends.
	defer a.close()
	adm, svc, plugins := a.adm, a.svc, a.plugins

	lis, err := cfg.Listen.Listener()
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen.Address, err)
	}
	// Admit continues sync's trace when tracing is on.
	srv := newHTTPServer(svc.Handler(tracing.ConnectHandlerOptions()...))

	runCtx, stopManager := context.WithCancel(ctx)
	defer stopManager()
	managerDone := make(chan struct{})
	go func() {
		defer close(managerDone)
		mgr.Run(runCtx, adm.ActivePods, cfg.Eviction.EvaluationInterval.Duration)
	}()

	featuresDone := make(chan struct{})
	go func() {
		defer close(featuresDone)
		if runtimeFeatures != nil {
			watchRuntimeFeatures(runCtx, runtimeFeatures, runtimeFeaturesPeriod, adm.SetNodeFeatures, log)
		}
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(lis) }()
	log.Info("serving", zap.String("address", lis.Addr().String()), zap.String("node", node.Name),
		zap.Bool("plugins", plugins != nil), zap.Bool("profiling", cfg.Profiling))

	select {
	case err := <-serveErr:
		stopManager()
		<-managerDone
		<-featuresDone
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	svc.Drain()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout.Duration)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("graceful shutdown timed out; closing connections")
		err = srv.Close()
	}
	stopManager()
	<-managerDone
	<-featuresDone
	return err
}

// admission is the admitter, the plugin chain it ends with and the service
// answering for them, wired as Run serves them (benchmarks build the same).
type admission struct {
	adm     *admitter.Admitter
	plugins *pluginhost.Chain // nil without plugins
	svc     *Service
	log     *zap.Logger
}

// newAdmission wires the admitter, the plugins of pcfg (nil: none) and the
// service. mgr may be nil (no eviction manager: no pressure, no evictions).
// svcOpts gives the service's Logger and Profiling; newAdmission fills in
// its Admitter, Evictions and Pods. close stops the plugins.
func newAdmission(ctx context.Context, node *v1.Node, mgr *eviction.Manager, pcfg *pluginhost.Config, svcOpts Options) (*admission, error) {
	log := svcOpts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	a := &admission{log: log}
	// One cache of decoded pods serves the three places that would each
	// redo work per active pod: decoding (the service), requests and host
	// ports (the predicate) and encoding for the plugins.
	pods := &podcache.Cache{}
	// The plugins see the node as GetNode shows it (a read-only view,
	// since they only encode it); the admitter that
	// serves it needs the plugins first, hence the late binding.
	var adm *admitter.Admitter
	if pcfg != nil {
		plugins, err := pluginhost.New(ctx, pcfg, pluginhost.Options{
			Logger:    log.Named("plugins"),
			Encodings: pods,
			// The plugin hop carries the Admit call's trace context
			// (traceparent in the gRPC metadata) when tracing is on.
			GRPCDialOptions: tracing.GRPCDialOptions(),
			GetNode: func(ctx context.Context) (*v1.Node, error) {
				if adm == nil {
					return nil, fmt.Errorf("node not built yet: %w", errdefs.ErrUnavailable)
				}
				return adm.NodeView(ctx)
			},
		})
		if err != nil {
			return nil, fmt.Errorf("pluginsConfig: starting plugins: %w", err)
		}
		a.plugins = plugins
	}
	opts := admitter.Options{Node: node, ActivePodInfos: pods}
	svcOpts.Logger, svcOpts.Pods = log, pods
	// A nil *eviction.Manager must not become a non-nil interface.
	if mgr != nil {
		opts.Eviction = mgr
		svcOpts.Evictions = mgr
	}
	if a.plugins != nil {
		opts.Plugins = a.plugins
	}
	var err error
	if adm, err = admitter.New(opts); err != nil {
		a.close()
		return nil, err
	}
	a.adm = adm
	svcOpts.Admitter = adm
	a.svc = NewService(svcOpts)
	return a, nil
}

func (a *admission) close() {
	if a.plugins == nil {
		return
	}
	if err := a.plugins.Close(); err != nil {
		a.log.Warn("stopping plugins", zap.Error(err))
	}
}

// newHTTPServer serves h on HTTP/1.1 and cleartext HTTP/2 (h2c): gRPC
// clients need HTTP/2 and the process serves the node, not the internet, so
// TLS is left to the network (loopback by default).
func newHTTPServer(h http.Handler) *http.Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler:           h,
		Protocols:         &protocols,
		ReadHeaderTimeout: 10 * time.Second,
	}
}

// newEvictionManager builds the eviction manager from the eviction section:
// thresholds (the kubelet's defaults when none are configured), observed on
// this machine, with pod usage from stats. Without stats, every pod lacks
// usage and ranking falls back to priority, as the kubelet's does for pods
// it cannot measure.
func newEvictionManager(cfg config.Config, stats eviction.PodStatsProvider) (*eviction.Manager, error) {
	thresholds, err := eviction.ParseThresholdConfig(cfg.Eviction.ThresholdConfig())
	if err != nil {
		return nil, fmt.Errorf("eviction: %w", err)
	}
	nodeFs := cfg.Eviction.NodeFsRoot
	if nodeFs == "" {
		nodeFs = cfg.Node.RootDir
	}
	source := eviction.NewMachineSource(eviction.MachineConfig{NodeFsRoot: nodeFs, ImageFsRoot: cfg.Eviction.ImageFsRoot}, stats)
	dedicated, err := source.HasDedicatedImageFs()
	if err != nil {
		return nil, fmt.Errorf("eviction: nodeFsRoot/imageFsRoot: %w", err)
	}
	return eviction.NewManager(eviction.Config{
		Thresholds:               thresholds,
		PressureTransitionPeriod: cfg.Eviction.PressureTransitionPeriod.Duration,
		MaxPodGracePeriodSeconds: cfg.Eviction.MaxPodGracePeriodSeconds,
		DedicatedImageFs:         dedicated,
		// A sync that does not answer a reclaim request delays an
		// eviction by one evaluation interval at most.
		NodeReclaimTimeout: cfg.Eviction.EvaluationInterval.Duration,
	}, source), nil
}
