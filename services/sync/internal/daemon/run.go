// Package daemon wires splitlet-sync together: the CRI client to the
// gateway, the pod store, the sources, the pod manager, the runtime manager,
// the admission client (when --admission-endpoint is set, with its eviction
// watcher), the sync loop, the API server source with its status manager,
// event sink and node registration (when --kubeconfig is set) and the
// PodService and the kubelet's node API (when --node-api-addr is set), in
// that order, and runs them until the context ends.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // registers the handlers on http.DefaultServeMux
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/splitlet/splitlet/internal/opsmux"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/criclient"
	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/tracing"
	"github.com/splitlet/splitlet/services/sync/internal/admission"
	"github.com/splitlet/splitlet/services/sync/internal/apiserver"
	"github.com/splitlet/splitlet/services/sync/internal/backoff"
	"github.com/splitlet/splitlet/services/sync/internal/cm"
	"github.com/splitlet/splitlet/services/sync/internal/config"
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/policycheck"
	"github.com/splitlet/splitlet/services/sync/internal/prober"
	"github.com/splitlet/splitlet/services/sync/internal/pullcreds"
	"github.com/splitlet/splitlet/services/sync/internal/runtimestate"
	"github.com/splitlet/splitlet/services/sync/internal/server"
	"github.com/splitlet/splitlet/services/sync/internal/source"
	"github.com/splitlet/splitlet/services/sync/internal/stats"
	"github.com/splitlet/splitlet/services/sync/internal/statuskeep"
	"github.com/splitlet/splitlet/services/sync/internal/store"
	"github.com/splitlet/splitlet/services/sync/internal/syncloop"
	"github.com/splitlet/splitlet/services/sync/internal/sysctl"
)

// shutdownTimeout bounds the HTTP server's graceful shutdown.
const shutdownTimeout = 5 * time.Second

// Run runs splitlet-sync until ctx ends. The logger comes from ctx.
func Run(ctx context.Context, cfg config.Config) error {
	log := logctx.From(ctx)

	// With tracing on, each CRI call is a span of the pod sync that made
	// it and carries its trace context to the gateway.
	conn, err := grpc.NewClient(cfg.RuntimeEndpoint, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(criclient.ConnectParams),
		grpc.WithChainUnaryInterceptor(criclient.Timeouts(cfg.RuntimeRequestTimeout))}, tracing.GRPCDialOptions()...)...)
	if err != nil {
		return fmt.Errorf("runtime endpoint %s: %w", cfg.RuntimeEndpoint, err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	images := runtimeapi.NewImageServiceClient(conn)

	st, err := store.Open(filepath.Join(cfg.StateDir, "pods.db"))
	if errors.Is(err, store.ErrCorrupt) {
		return fmt.Errorf("%w; sync will not start on it, since starting empty would forget every pod applied through the API "+
			"and remove their containers: restore a copy of the file, or move it aside to start empty and apply the pods again", err)
	}
	if err != nil {
		return err
	}
	defer st.Close()

	sources := []string{source.APISourceName}
	if cfg.ManifestURL != "" {
		sources = append(sources, source.HTTPSourceName)
	}
	if cfg.ManifestDir != "" {
		sources = append(sources, source.FileSourceName)
	}
	admissionHTTP, err := dialAdmission(cfg.Admission)
	if err != nil {
		return err
	}
	var kubeClient kubernetes.Interface
	envOptions := kuberuntime.EnvOptions{HostIPs: cfg.NodeIPs, NodeAllocatable: nodeAllocatable(nodeReport(admissionHTTP), allocatableTTL)}
	var objects *apiserver.Objects
	if cfg.Kubeconfig != "" {
		kubeClient, err = apiserver.NewNodeClient(ctx, apiserver.ClientOptions{Kubeconfig: cfg.Kubeconfig,
			BootstrapKubeconfig: cfg.BootstrapKubeconfig, CertDir: cfg.CertDir, NodeName: cfg.NodeName})
		if err != nil {
			return err
		}
		sources = append(sources, apiserver.SourceName)
		objects = apiserver.NewObjects(kubeClient, apiserver.ObjectsOptions{})
		envOptions.Objects = objects
	}
	podConfig := source.NewPodConfig(sources...)
	pods := podmanager.New()
	// What the previous run of sync last reported of each pod: the first
	// status generated for a pod after this restart starts from it, and a
	// static pod keeps its creation time.
	kept, err := st.Statuses()
	if err != nil {
		return fmt.Errorf("read the kept pod statuses: %w", err)
	}
	podConfig.SetCreationTimes(func(uid types.UID) (metav1.Time, bool) {
		k, ok := kept[uid]
		return k.CreationTimestamp, ok && !k.CreationTimestamp.IsZero()
	})

	if len(cfg.ClusterDNS) == 0 {
		log.Warn("no --cluster-dns: pods with dnsPolicy ClusterFirst fall back to the node's resolv.conf, as the kubelet's do")
	}
	recorder := events.New(ctx, events.Options{NodeName: cfg.NodeName})
	curve := backoff.Config{Initial: cfg.BackOffBase, Max: cfg.BackOffMax}
	podsDir := filepath.Join(cfg.StateDir, "pods")
	// Which credentials pulled each image, so that a pod without them
	// cannot use one (KubeletEnsureSecretPulledImages). Unreadable
	// records are not fatal: every present image is then verified.
	pullRecords, err := pullcreds.OpenRecords(filepath.Join(cfg.StateDir, "image-pulls.json"))
	if err != nil {
		log.Error("image pull records are unreadable", zap.Error(err))
	}
	runtimeManager := kuberuntime.NewManager(rt, images, kuberuntime.ManagerOptions{
		Sandbox: kuberuntime.SandboxOptions{PodLogsRoot: cfg.PodLogsRoot, NodeIPs: cfg.NodeIPs, ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain},
		Container: kuberuntime.ContainerOptions{
			EnvOptions:            envOptions,
			PodLogsRoot:           cfg.PodLogsRoot,
			PodVolumesRoot:        podsDir,
			PodContainersRoot:     podsDir,
			ClusterDomain:         cfg.ClusterDomain,
			MachineMemoryCapacity: machineMemory(),
		},
		CrashLoop:   backoff.New(curve, nil),
		ImagePull:   backoff.New(curve, nil),
		PullRecords: pullRecords,
		Recorder:    recorder,
	})

	// The API source reports the stored pods at once; the sync loop reads
	// them as soon as it starts.
	apiSource, err := source.NewAPISource(ctx, st, cfg.NodeName, podConfig)
	if err != nil {
		log.Error("some stored pods could not be read", zap.Error(err))
	}
	apiSource.SetAPIObjects(kubeClient != nil)
	apiSource.SetPolicy(policycheck.New(conn, protectedDirs(cfg)...).Check)

	// The prober's counters have their own registry, served by the node
	// API on /metrics/probes as the kubelet's.
	probeReg := prometheus.NewRegistry()
	probes := prober.NewManager(ctx, prober.Options{Execer: runtimeManager, Status: pods, Recorder: recorder,
		Metrics: prober.NewMetrics(probeReg)})

	// Without an admission endpoint every pod is admitted (AlwaysAdmit) and
	// nothing is evicted.
	var admitter syncloop.Admitter = syncloop.AlwaysAdmit{}
	var admissionClient *admission.Client
	if admissionHTTP != nil {
		admissionClient = admission.New(admissionHTTP.base, admission.Options{Timeout: cfg.AdmissionTimeout,
			HTTPClient: admissionHTTP.client, Name: cfg.Admission.Endpoint, ClientOptions: tracing.ConnectClientOptions()})
		admitter = admissionClient
	}
	failurePolicy, err := syncloop.ParseFailurePolicy(cfg.AdmissionFailurePolicy)
	if err != nil {
		return err
	}
	sysctls, err := allowedSysctls(ctx, cfg.AllowedUnsafeSysctls)
	if err != nil {
		return err
	}

	finalizers := map[string]syncloop.Finalizer{source.APISourceName: apiSource}
	var statusManager *apiserver.StatusManager
	if kubeClient != nil {
		statusManager = apiserver.NewStatusManager(kubeClient, pods, apiserver.StatusOptions{})
		finalizers[apiserver.SourceName] = statusManager
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The runtime's network readiness, asked every 5 s: pods on the pod
	// network wait for it (the kubelet's runtimeState).
	network := runtimestate.New(rt)
	kubelet := syncloop.New(syncloop.Options{
		ResyncInterval:    cfg.ResyncInterval,
		BackOffPeriod:     min(cfg.BackOffBase, cfg.ResyncInterval),
		RelistInterval:    cfg.RelistInterval,
		ContainerGCPeriod: cfg.ContainerGCPeriod,
		PodCgroups:        podCgroups(cfg.CgroupRoot),
		HostIPs:           cfg.NodeIPs,
		KeptStatus: func(uid types.UID) (v1.PodStatus, bool) {
			k, ok := kept[uid]
			return k.Status, ok
		},
		Finalizers: finalizers,
		Metrics:    syncloop.NewMetrics(reg),
		Recorder:   recorder,
		Prober:     probes,
		Network:    network,
		Sysctls:    sysctls,
		Admitter:   admitter,

		AdmissionFailurePolicy: failurePolicy,
	}, podConfig, pods, runtimeManager, rt)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Known before the first pod syncs, so that pods on the pod network
	// do not wait a retry period for the first answer.
	firstCtx, firstDone := context.WithTimeout(ctx, 2*time.Second)
	network.Update(firstCtx)
	firstDone()
	// Every background loop runs under bg, which Run waits for before the
	// store closes: none of them outlives Run.
	var bg sync.WaitGroup
	bg.Go(func() { network.Run(ctx) })
	if cfg.ManifestDir != "" {
		fileSource := source.NewFileSource(cfg.ManifestDir, cfg.NodeName, cfg.FileCheckFrequency, podConfig, nil)
		bg.Go(func() { fileSource.Run(ctx) })
	}
	if cfg.ManifestURL != "" {
		httpSource := source.NewHTTPSource(cfg.ManifestURL, cfg.ManifestURLHeader, cfg.NodeName, cfg.HTTPCheckFrequency, podConfig, nil)
		bg.Go(func() { httpSource.Run(ctx) })
	}
	if admissionClient != nil {
		bg.Go(func() { admissionClient.WatchEvictions(ctx, kubelet) })
	}
	// The node API listens before the Node is registered, which carries its
	// port.
	var api *nodeAPI
	if cfg.NodeAPIAddr != "" {
		// The kubelet's stats: /stats/summary and /metrics/resource, with
		// CPU sampled every 10 s for runtimes that give no rate.
		summary := stats.New(stats.Options{
			NodeName: cfg.NodeName, Runtime: rt, Images: images,
			Host:    stats.Host{CgroupRoot: cfg.CgroupRoot},
			RootDir: cfg.StateDir, PodLogsRoot: cfg.PodLogsRoot, PodsDir: podsDir,
			PodCgroupRoot: "/kubepods", // kuberuntime.CgroupfsPodCgroupParent's root
		})
		if api, err = newNodeAPI(ctx, cfg, kubeClient, pods, rt, summary, reg, probeReg); err != nil {
			return err
		}
		defer api.ln.Close()
		bg.Go(func() { api.runAuth(ctx) })
		bg.Go(func() { summary.Run(ctx) })
	}
	if kubeClient != nil {
		// Static pods get mirror pods only where sync registers its Node:
		// a mirror is owned by the Node.
		var mirrors *apiserver.MirrorManager
		if cfg.RegisterNode {
			mirrors = apiserver.NewMirrorManager(kubeClient, cfg.NodeName, pods, statusManager.Requeue)
			bg.Go(func() { mirrors.Run(ctx) })
		}
		podSource := apiserver.NewPodSource(kubeClient, cfg.NodeName, podConfig, mirrorSetter(mirrors))
		bg.Go(func() { podSource.Run(ctx) })
		bg.Go(func() { objects.Run(ctx) })
		bg.Go(func() { statusManager.Run(ctx) })
		eventSink := apiserver.NewEventSink(kubeClient, pods)
		bg.Go(func() { eventSink.Run(ctx, recorder) })
		if cfg.RegisterNode {
			opts := apiserver.NodeOptions{
				Name:       cfg.NodeName,
				Labels:     cfg.NodeLabels,
				Taints:     cfg.RegisterWithTaints,
				Report:     nodeReport(admissionHTTP),
				Addresses:  apiserver.NodeAddresses(cfg.NodeIPs, hostname()),
				Runtime:    rt,
				Images:     images,
				SystemInfo: systemInfo(),
			}
			if api != nil {
				// The API server's proxy (kubectl logs) dials
				// https://<node address>:<this port>.
				opts.KubeletPort = api.port()
				if len(cfg.NodeIPs) == 0 {
					log.Warn("no --node-ip: the Node reports no InternalIP, so an API server preferring InternalIP (kubeadm's) cannot reach the node API")
				}
			}
			registrar := apiserver.NewNodeRegistrar(kubeClient, opts)
			bg.Go(func() { registrar.Run(ctx) })
		}
	}

	mux := http.NewServeMux()
	path, handler := server.NewHandler(server.New(apiSource, pods, recorder, rt),
		connect.WithInterceptors(logInterceptor(log)),
		// Clients are on the node (loopback by default): gzip would spend
		// CPU on every Watch event to save nothing; big Lists still shrink.
		connect.WithCompressMinBytes(compressMinBytes))
	// Only the PodService needs a credential: /healthz and /metrics
	// beside it do not (internal/apiauth).
	guard, err := cfg.Listen.Authenticator()
	if err != nil {
		return err
	}
	mux.Handle(path, guard(handler))
	addOps(mux, reg, cfg.Profiling)
	podLn, err := cfg.Listen.Listener()
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen.Address, err)
	}
	listeners := []net.Listener{podLn}
	servers := []*http.Server{newHTTPServer(mux)}
	if cfg.MetricsAddr != "" {
		ops := http.NewServeMux()
		addOps(ops, reg, cfg.Profiling)
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			podLn.Close()
			return fmt.Errorf("--metrics %s: %w", cfg.MetricsAddr, err)
		}
		listeners = append(listeners, ln)
		servers = append(servers, newHTTPServer(ops))
	}
	errs := make(chan error, len(servers)+1)
	for i, srv := range servers {
		ln := listeners[i]
		log.Info("serving", zap.String("addr", ln.Addr().String()))
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- err
			}
		}()
	}
	if api != nil {
		log.Info("serving the node API", zap.String("addr", api.ln.Addr().String()))
		servers = append(servers, api.srv)
		go func() {
			if err := api.srv.ServeTLS(api.ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("node API: %w", err)
			}
		}()
	}
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		_ = kubelet.Run(ctx)
	}()
	// The keeper writes to the store: it stops after the sync loop (so the
	// loop's last statuses are kept) and before the store closes (deferred
	// above).
	keeper := statuskeep.New(st, pods)
	keeper.Register(reg)
	keeperCtx, stopKeeper := context.WithCancel(context.WithoutCancel(ctx))
	defer stopKeeper()
	keeperDone := make(chan struct{})
	go func() {
		defer close(keeperDone)
		keeper.Run(keeperCtx)
	}()

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errs:
		cancel()
	}
	shutdownCtx, done := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer done()
	for _, srv := range servers {
		_ = srv.Shutdown(shutdownCtx)
	}
	<-loopDone
	waitBackground(shutdownCtx, &bg, log)
	stopKeeper()
	<-keeperDone
	return runErr
}

// waitBackground waits for Run's background loops, which end with Run's
// context, or until ctx (the shutdown timeout) ends: one stuck loop must not
// keep sync from stopping, and is named in the log.
func waitBackground(ctx context.Context, bg *sync.WaitGroup, log *zap.Logger) {
	done := make(chan struct{})
	go func() {
		bg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		log.Warn("background loops still running at the end of the shutdown timeout")
	}
}

// protectedDirs are the directories no pod may mount (policycheck): sync's
// state, and the directories of its own socket and the gateway's.
func protectedDirs(cfg config.Config) []string {
	dirs := []string{cfg.StateDir}
	for _, sock := range []string{cfg.Listen.SocketPath(), strings.TrimPrefix(cfg.RuntimeEndpoint, "unix://")} {
		if filepath.IsAbs(sock) {
			dirs = append(dirs, filepath.Dir(sock))
		}
	}
	return dirs
}

// compressMinBytes is the smallest PodService response sync gzips for a
// client that accepts it: a page of pods, not one pod or one event.
const compressMinBytes = 64 << 10

// newHTTPServer serves h over HTTP/1.1 and HTTP/2, cleartext or over TLS
// (when the listener is apiauth's TLS one), so gRPC clients (which need
// HTTP/2) and curl both work.
func newHTTPServer(h http.Handler) *http.Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Server{Handler: h, Protocols: &protocols, ReadHeaderTimeout: 10 * time.Second}
}

// addOps adds /metrics, /healthz and, with profiling, /debug/pprof/ to
// mux, as every splitlet process does (opsmux).
func addOps(mux *http.ServeMux, reg *prometheus.Registry, profiling bool) {
	opsmux.Add(mux, reg, nil, profiling)
}

// logInterceptor puts the process logger, with the procedure, in every
// request's context and logs failed calls.
func logInterceptor(log *zap.Logger) connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			l := log.WithLazy(zap.String("procedure", req.Spec().Procedure))
			resp, err := next(logctx.With(ctx, l), req)
			if err != nil {
				l.Info("request failed", zap.Error(err))
			}
			return resp, err
		}
	})
}

// allowedSysctls are the sysctls pods may set: the safe ones of the running
// kernel and the operator's unsafe ones, as the kubelet's NewMainKubelet
// builds its sysctl allowlist.
func allowedSysctls(ctx context.Context, unsafe []string) (*sysctl.Allowlist, error) {
	kernel, err := sysctl.KernelVersion()
	if err != nil {
		logctx.From(ctx).Warn("kernel version unknown: only the sysctls safe in every kernel are allowed", zap.Error(err))
	}
	w, err := sysctl.NewAllowlist(append(sysctl.SafeSysctlAllowlist(kernel), unsafe...))
	if err != nil {
		return nil, fmt.Errorf("--allowed-unsafe-sysctls: %w", err)
	}
	return w, nil
}

// podCgroups returns the remover of pod cgroups under root, or nil (no
// removal) when root is empty.
func podCgroups(root string) syncloop.PodCgroupRemover {
	if root == "" {
		return nil
	}
	return cm.New(root)
}

// mirrorSetter is m as a MirrorSetter, nil (mirror pods dropped) when
// there is no MirrorManager.
func mirrorSetter(m *apiserver.MirrorManager) apiserver.MirrorSetter {
	if m == nil {
		return nil
	}
	return m
}
