package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

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
	"k8s.io/utils/ptr"

	"github.com/splitlet/splitlet/internal/criclient"
	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/opsmux"
	"github.com/splitlet/splitlet/internal/qos"
	"github.com/splitlet/splitlet/internal/tracing"
	"github.com/splitlet/splitlet/services/sync/internal/admission"
	"github.com/splitlet/splitlet/services/sync/internal/allocation"
	"github.com/splitlet/splitlet/services/sync/internal/apiserver"
	"github.com/splitlet/splitlet/services/sync/internal/backoff"
	"github.com/splitlet/splitlet/services/sync/internal/cm"
	"github.com/splitlet/splitlet/services/sync/internal/config"
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/imagegc"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/podresources"
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

// builder carries what build's steps hand to each other; the daemon it
// fills keeps only what run and close use.
type builder struct {
	cfg config.Config
	log *zap.Logger
	d   *daemon

	rt     runtimeapi.RuntimeServiceClient
	images runtimeapi.ImageServiceClient
	kept   map[types.UID]store.KeptStatus
	// cgroupDriver is the runtime's, which names pod cgroups.
	cgroupDriver kuberuntime.CgroupDriver
	// podCgroupManager and qosCgroups make pod cgroups and keep the QoS ones
	// (--cgroups-per-qos); nil when sync leaves them to the runtime.
	podCgroupManager kuberuntime.PodCgroups
	qosCgroups       *cm.QOSContainerManager

	admission  *admissionConn
	kubeClient kubernetes.Interface
	objects    *apiserver.Objects
	podConfig  *source.PodConfig
	pods       *podmanager.Manager
	apiSource  *source.APISource

	recorder       *events.Recorder
	runtimeManager *kuberuntime.Manager
	// allocations are the pods' allocated and actuated resources (in-place
	// resize), shared by the runtime manager and the sync loop.
	allocations *allocation.Manager
	probes      *prober.Manager
	// The prober's counters have their own registry, served by the node
	// API on /metrics/probes as the kubelet's.
	probeReg *prometheus.Registry
	reg      *prometheus.Registry

	admissionClient *admission.Client
	statusManager   *apiserver.StatusManager
	network         *runtimestate.State
	kubelet         *syncloop.Kubelet
	api             *nodeAPI
	// summary is the kubelet's stats provider: the node API serves it, the
	// image garbage collector reads the image filesystem from it.
	summary *stats.Provider
	// imageGC frees the image filesystem on its own period and when the
	// eviction manager asks (admission's reclaim requests).
	imageGC *imagegc.Manager
}

// build constructs every part of splitlet-sync, in the order of the
// package comment, and starts none of them. On an error it releases what
// it opened: the CRI connection, the store and the listeners.
func build(ctx context.Context, cfg config.Config) (_ *daemon, retErr error) {
	b := &builder{cfg: cfg, log: logctx.From(ctx), d: &daemon{log: logctx.From(ctx), streams: make(chan struct{})}}
	defer func() {
		if retErr != nil {
			_ = b.d.close()
		}
	}()
	for _, step := range []func(context.Context) error{
		b.checkSwap,
		b.dialRuntime,
		b.detectCgroupDriver,
		b.buildCgroups,
		b.openStore,
		b.buildSources,
		b.buildRuntimeManager,
		b.buildSyncLoop,
		b.buildStats,
		b.buildNodeAPI,
		b.buildPodResources,
		b.buildBackground,
		b.buildServers,
	} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	// The keeper writes the pods' statuses to the store, for the next run
	// of sync (kept, above).
	keeper := statuskeep.New(b.d.store, b.pods)
	keeper.Register(b.reg)
	b.d.keeper = keeper
	return b.d, nil
}

// checkSwap refuses a node with swap on unless --fail-swap-on=false, as the
// kubelet's NewContainerManager does before anything starts.
func (b *builder) checkSwap(context.Context) error {
	if !b.cfg.FailSwapOn {
		return nil
	}
	on, err := kuberuntime.SwapOn("/proc/swaps")
	if err != nil {
		return fmt.Errorf("failed to determine if swap is on: %w", err)
	}
	if on {
		return kuberuntime.ErrSwapOn
	}
	return nil
}

// dialRuntime makes the CRI client to the gateway. It does not connect:
// the first call does.
func (b *builder) dialRuntime(context.Context) error {
	// With tracing on, each CRI call is a span of the pod sync that made
	// it and carries its trace context to the gateway.
	conn, err := grpc.NewClient(b.cfg.RuntimeEndpoint, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(criclient.ConnectParams),
		grpc.WithChainUnaryInterceptor(criclient.Timeouts(b.cfg.RuntimeRequestTimeout))}, tracing.GRPCDialOptions()...)...)
	if err != nil {
		return fmt.Errorf("runtime endpoint %s: %w", b.cfg.RuntimeEndpoint, err)
	}
	b.d.conn = conn
	b.rt = runtimeapi.NewRuntimeServiceClient(conn)
	b.images = runtimeapi.NewImageServiceClient(conn)
	return nil
}

// openStore opens the pod store and reads the statuses the previous run
// of sync kept.
func (b *builder) openStore(context.Context) error {
	st, err := store.Open(filepath.Join(b.cfg.StateDir, "pods.db"))
	if errors.Is(err, store.ErrCorrupt) {
		return fmt.Errorf("%w; sync will not start on it, since starting empty would forget every pod applied through the API "+
			"and remove their containers: restore a copy of the file, or move it aside to start empty and apply the pods again", err)
	}
	if err != nil {
		return err
	}
	b.d.store = st
	// What the previous run of sync last reported of each pod: the first
	// status generated for a pod after this restart starts from it, and a
	// static pod keeps its creation time.
	if b.kept, err = st.Statuses(); err != nil {
		return fmt.Errorf("read the kept pod statuses: %w", err)
	}
	return nil
}

// buildSources makes the pod sources' mux, with the API source and, with
// --kubeconfig, the API server's client; and the pod manager.
func (b *builder) buildSources(ctx context.Context) error {
	cfg := b.cfg
	sources := []string{source.APISourceName}
	if cfg.ManifestURL != "" {
		sources = append(sources, source.HTTPSourceName)
	}
	if cfg.ManifestDir != "" {
		sources = append(sources, source.FileSourceName)
	}
	var err error
	if b.admission, err = dialAdmission(cfg.Admission); err != nil {
		return err
	}
	if cfg.Kubeconfig != "" {
		b.kubeClient, err = apiserver.NewNodeClient(ctx, apiserver.ClientOptions{Kubeconfig: cfg.Kubeconfig,
			BootstrapKubeconfig: cfg.BootstrapKubeconfig, CertDir: cfg.CertDir, NodeName: cfg.NodeName})
		if err != nil {
			return err
		}
		sources = append(sources, apiserver.SourceName)
		b.objects = apiserver.NewObjects(b.kubeClient, apiserver.ObjectsOptions{})
	}
	b.podConfig = source.NewPodConfig(sources...)
	b.pods = podmanager.New()
	b.podConfig.SetCreationTimes(func(uid types.UID) (metav1.Time, bool) {
		k, ok := b.kept[uid]
		return k.CreationTimestamp, ok && !k.CreationTimestamp.IsZero()
	})

	// The API source reports the stored pods at once; the sync loop reads
	// them as soon as it starts.
	b.apiSource, err = source.NewAPISource(ctx, b.d.store, cfg.NodeName, b.podConfig)
	if err != nil {
		b.log.Error("some stored pods could not be read", zap.Error(err))
	}
	b.apiSource.SetAPIObjects(b.kubeClient != nil)
	b.apiSource.SetPolicy(policycheck.New(b.d.conn, protectedDirs(cfg)...).Check)
	return nil
}

// buildRuntimeManager makes the event recorder, the runtime manager and
// the prober.
func (b *builder) buildRuntimeManager(ctx context.Context) error {
	cfg := b.cfg
	if len(cfg.ClusterDNS) == 0 {
		b.log.Warn("no --cluster-dns: pods with dnsPolicy ClusterFirst fall back to the node's resolv.conf, as the kubelet's do")
	}
	envOptions := kuberuntime.EnvOptions{HostIPs: cfg.NodeIPs, NodeAllocatable: nodeAllocatable(nodeReport(b.admission), allocatableTTL)}
	if b.objects != nil {
		envOptions.Objects = b.objects
	}
	b.recorder = events.New(ctx, events.Options{NodeName: cfg.NodeName})
	crashLoop, imagePull := backOffCurves(cfg)
	// Which credentials pulled each image, so that a pod without them
	// cannot use one (KubeletEnsureSecretPulledImages). Unreadable
	// records are not fatal: every present image is then verified.
	pullRecords, err := pullcreds.OpenRecords(filepath.Join(cfg.StateDir, "image-pulls.json"))
	if err != nil {
		b.log.Error("image pull records are unreadable", zap.Error(err))
	}
	// What the node granted each pod and applied to each container, kept
	// across restarts (the kubelet's allocation and actuated checkpoints).
	// An unreadable file is not fatal: pods are allocated what they ask.
	allocations, err := allocation.New(filepath.Join(cfg.StateDir, "allocated-pods.json"))
	if err != nil {
		b.log.Error("pod allocations are unreadable", zap.Error(err))
	}
	b.allocations = allocations
	var runtimeClasses kuberuntime.RuntimeClasses
	if b.objects != nil {
		runtimeClasses = b.objects
	}
	cfs := kuberuntime.CPUCFS{DisableQuota: !cfg.CPUCFSQuota, QuotaPeriod: cfg.CPUCFSQuotaPeriod}
	b.runtimeManager = kuberuntime.NewManager(b.rt, b.images, kuberuntime.ManagerOptions{
		Sandbox: kuberuntime.SandboxOptions{PodLogsRoot: cfg.PodLogsRoot, NodeIPs: cfg.NodeIPs, ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain, CFS: cfs,
			CgroupParent: b.cgroupDriver.PodCgroupParent()},
		Container: kuberuntime.ContainerOptions{
			CFS:                   cfs,
			EnvOptions:            envOptions,
			PodLogsRoot:           cfg.PodLogsRoot,
			PodVolumesRoot:        podsDir(cfg),
			PodContainersRoot:     podsDir(cfg),
			ClusterDomain:         cfg.ClusterDomain,
			MachineMemoryCapacity: machineMemory(),
			SwapController:        kuberuntime.DetectSwapController("/sys/fs/cgroup", "/proc/self/cgroup"),
			SwapBehavior:          kuberuntime.SwapBehavior(cfg.MemorySwapBehavior),
			MachineSwapCapacity:   meminfoBytes("/proc/meminfo", "SwapTotal"),
		},
		CrashLoop:   backoff.New(crashLoop, nil),
		ImagePull:   backoff.New(imagePull, nil),
		PullRecords: pullRecords,
		Recorder:    b.recorder,
		Actuated:    allocations,

		RuntimeClasses: runtimeClasses,
		PodCgroups:     b.podCgroupManager,
	})

	b.probeReg = prometheus.NewRegistry()
	b.probes = prober.NewManager(ctx, prober.Options{Execer: b.runtimeManager, Status: b.pods, Recorder: b.recorder,
		Metrics: prober.NewMetrics(b.probeReg)})
	return nil
}

// backOffCurves are the kubelet's two back-off curves: the crash loop's
// (newCrashLoopBackOff: capped by maxContainerRestartPeriod, its first delay
// no longer than the cap, a container forgotten after 600 s without a
// restart whatever the cap, its HasExpiredFunc) and the image pull's
// (10 s to MaxImageBackOff, forgotten after twice that).
func backOffCurves(cfg config.Config) (crashLoop, imagePull backoff.Config) {
	crashLoop = backoff.Config{Initial: min(cfg.BackOffBase, cfg.MaxContainerRestartPeriod), Max: cfg.MaxContainerRestartPeriod,
		ResetAfter: backoff.CrashLoopResetAfter}
	imagePull = backoff.Config{Initial: cfg.BackOffBase, Max: cfg.ImagePullBackOffMax}
	return crashLoop, imagePull
}

// buildSyncLoop makes the admission client, the API server's status
// manager and the sync loop.
func (b *builder) buildSyncLoop(ctx context.Context) error {
	cfg := b.cfg
	// Without an admission endpoint every pod is admitted (AlwaysAdmit) and
	// nothing is evicted.
	var admitter syncloop.Admitter = syncloop.AlwaysAdmit{}
	if b.admission != nil {
		b.admissionClient = admission.New(b.admission.base, admission.Options{Timeout: cfg.AdmissionTimeout,
			HTTPClient: b.admission.client, Name: cfg.Admission.Endpoint, ClientOptions: tracing.ConnectClientOptions()})
		admitter = b.admissionClient
	}
	failurePolicy, err := syncloop.ParseFailurePolicy(cfg.AdmissionFailurePolicy)
	if err != nil {
		return err
	}
	sysctls, err := allowedSysctls(ctx, cfg.AllowedUnsafeSysctls)
	if err != nil {
		return err
	}

	finalizers := map[string]syncloop.Finalizer{source.APISourceName: b.apiSource}
	if b.kubeClient != nil {
		b.statusManager = apiserver.NewStatusManager(b.kubeClient, b.pods, apiserver.StatusOptions{})
		finalizers[apiserver.SourceName] = b.statusManager
	}

	b.reg = prometheus.NewRegistry()
	b.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The runtime's network readiness, asked every 5 s: pods on the pod
	// network wait for it (the kubelet's runtimeState).
	b.network = runtimestate.New(b.rt)
	b.d.network = b.network
	b.kubelet = syncloop.New(syncloop.Options{
		ResyncInterval:    cfg.ResyncInterval,
		BackOffPeriod:     min(cfg.BackOffBase, cfg.ResyncInterval),
		RelistInterval:    cfg.RelistInterval,
		ContainerGCPeriod: cfg.ContainerGCPeriod,
		PodCgroups:        b.podCgroups(),
		HostIPs:           cfg.NodeIPs,
		KeptStatus: func(uid types.UID) (v1.PodStatus, bool) {
			k, ok := b.kept[uid]
			return k.Status, ok
		},
		Finalizers: finalizers,
		Metrics:    syncloop.NewMetrics(b.reg),
		Recorder:   b.recorder,
		Prober:     b.probes,
		Network:    b.network,
		Sysctls:    sysctls,
		Admitter:   admitter,
		Allocation: b.allocations,

		AdmissionFailurePolicy: failurePolicy,
	}, b.podConfig, b.pods, b.runtimeManager, b.rt)
	b.d.kubelet = b.kubelet
	return nil
}

// cgroupDriverRetry is how often sync asks again for the runtime's cgroup
// driver while the runtime does not answer (the kubelet's 2 s).
const cgroupDriverRetry = 2 * time.Second

// detectCgroupDriver learns the runtime's cgroup driver, which names pod
// cgroups, as the kubelet does at start (getCgroupDriverFromCRI), waiting
// for the runtime at most --runtime-request-timeout.
func (b *builder) detectCgroupDriver(ctx context.Context) error {
	// config.Parse took cgroupfs or systemd only.
	fallback := kuberuntime.CgroupDriver(b.cfg.CgroupDriver)
	ctx, cancel := context.WithTimeout(ctx, b.cfg.RuntimeRequestTimeout)
	defer cancel()
	driver, err := kuberuntime.DetectCgroupDriver(ctx, b.rt, fallback, cgroupDriverRetry)
	if err != nil {
		return err
	}
	b.log.Info("using cgroup driver", zap.String("cgroupDriver", string(driver)), zap.String("configured", string(fallback)))
	b.cgroupDriver = driver
	return nil
}

// buildStats makes the kubelet's stats provider and its image garbage
// collector, which frees the image filesystem it reports on.
func (b *builder) buildStats(context.Context) error {
	cfg := b.cfg
	b.summary = stats.New(stats.Options{
		NodeName: cfg.NodeName, Runtime: b.rt, Images: b.images,
		Host:    stats.Host{CgroupRoot: cfg.CgroupRoot},
		RootDir: cfg.StateDir, PodLogsRoot: cfg.PodLogsRoot, PodsDir: podsDir(cfg),
		PodCgroupRoot: b.cgroupDriver.PodCgroupRoot(),
	})
	gc, err := imagegc.New(imagegc.Options{
		Policy: cfg.ImageGC, Runtime: b.rt, Images: b.images, Registerer: b.reg,
		FsUsage: func(ctx context.Context) (int64, int64, error) {
			fs, err := b.summary.ImageFsStats(ctx)
			if err != nil {
				return 0, 0, err
			}
			return int64(ptr.Deref(fs.CapacityBytes, 0)), int64(ptr.Deref(fs.AvailableBytes, 0)), nil
		},
	})
	if err != nil {
		return err
	}
	b.imageGC = gc
	b.d.background = append(b.d.background, loop{"image garbage collection", gc.Run})
	return nil
}

// buildNodeAPI makes the kubelet's node API, with --node-api-addr, and
// binds its listener: the node API listens before the Node is registered,
// which carries its port.
func (b *builder) buildNodeAPI(ctx context.Context) error {
	cfg := b.cfg
	if cfg.NodeAPIAddr == "" {
		return nil
	}
	// The kubelet's stats: /stats/summary and /metrics/resource, with
	// CPU sampled every 10 s for runtimes that give no rate.
	summary := b.summary
	api, err := newNodeAPI(ctx, cfg, b.kubeClient, b.pods, b.rt, summary, b.reg, b.probeReg)
	if err != nil {
		return err
	}
	b.api = api
	b.d.servers = append(b.d.servers, httpServer{name: "node API", srv: api.srv, ln: api.ln, tls: true})
	b.d.background = append(b.d.background,
		loop{"node API certificates", api.reload},
		loop{"stats", summary.Run})
	return nil
}

// buildPodResources makes the kubelet's pod-resources API over the sync
// loop's active pods and binds its socket, with --pod-resources-socket
// (the kubelet's ListenAndServePodResources).
func (b *builder) buildPodResources(context.Context) error {
	path := b.cfg.PodResourcesSocket
	if path == "" {
		return nil
	}
	ln, err := podresources.Listen(path)
	if err != nil {
		return fmt.Errorf("--pod-resources-socket: %w", err)
	}
	srv := podresources.NewGRPCServer(podresources.New(b.kubelet, podresources.NewMetrics(b.reg)))
	b.d.servers = append(b.d.servers, grpcServer{name: "pod resources", addr: path, srv: srv, ln: ln})
	return nil
}

// buildBackground makes the loops that run beside the sync loop: the
// runtime's network readiness, the file and HTTP sources, the admission
// eviction watcher (which runs the container and image garbage collectors
// when the eviction manager asks) and the API server's loops.
func (b *builder) buildBackground(context.Context) error {
	cfg := b.cfg
	bg := []loop{{"network readiness", b.network.Run}}
	if cfg.ManifestDir != "" {
		fileSource := source.NewFileSource(cfg.ManifestDir, cfg.NodeName, cfg.FileCheckFrequency, b.podConfig, nil)
		bg = append(bg, loop{"file source", fileSource.Run})
	}
	if cfg.ManifestURL != "" {
		httpSource := source.NewHTTPSource(cfg.ManifestURL, cfg.ManifestURLHeader, cfg.NodeName, cfg.HTTPCheckFrequency, b.podConfig, nil)
		bg = append(bg, loop{"HTTP source", httpSource.Run})
	}
	if b.admissionClient != nil {
		gc := admission.NodeGC{Containers: b.kubelet, Images: b.imageGC}
		bg = append(bg, loop{"admission evictions", func(ctx context.Context) { b.admissionClient.WatchEvictions(ctx, b.kubelet, gc) }})
	}
	if b.qosCgroups != nil {
		bg = append(bg, loop{"QoS cgroups", func(ctx context.Context) {
			b.qosCgroups.Run(ctx, func(err error) { b.log.Info("failed to update QoS cgroups", zap.Error(err)) })
		}})
	}
	if b.kubeClient != nil {
		bg = append(bg, b.apiServerLoops()...)
	}
	b.d.background = append(bg, b.d.background...)
	return nil
}

// apiServerLoops are the loops talking to the API server: the pod
// source, the ConfigMap, Secret and Service watches, the status manager,
// the event sink and, with --register-node, the mirror pods and the Node.
func (b *builder) apiServerLoops() []loop {
	cfg := b.cfg
	var bg []loop
	// Static pods get mirror pods only where sync registers its Node:
	// a mirror is owned by the Node.
	var mirrors *apiserver.MirrorManager
	if cfg.RegisterNode {
		mirrors = apiserver.NewMirrorManager(b.kubeClient, cfg.NodeName, b.pods, b.statusManager.Requeue)
		bg = append(bg, loop{"mirror pods", mirrors.Run})
	}
	podSource := apiserver.NewPodSource(b.kubeClient, cfg.NodeName, b.podConfig, mirrorSetter(mirrors))
	eventSink := apiserver.NewEventSink(b.kubeClient, b.pods)
	bg = append(bg,
		loop{"API server pod source", podSource.Run},
		loop{"API server objects", b.objects.Run},
		loop{"status manager", b.statusManager.Run},
		loop{"event sink", func(ctx context.Context) { eventSink.Run(ctx, b.recorder) }})
	if cfg.RegisterNode {
		nodeEvents := apiserver.NewNodeEvents(b.kubeClient, cfg.NodeName)
		b.recordStartEvents(nodeEvents)
		opts := b.nodeOptions()
		opts.Events = nodeEvents
		registrar := apiserver.NewNodeRegistrar(b.kubeClient, opts)
		bg = append(bg, loop{"node events", nodeEvents.Run}, loop{"node registrar", registrar.Run})
	}
	return bg
}

// cgroupV1Warning is the kubelet's CgroupV1DeprecatedWarning, the message
// of its CgroupV1 event.
const cgroupV1Warning = "cgroup v1 detected. cgroup v1 support is deprecated and will be removed in a future release. Please migrate to cgroup v2. More information at https://git.k8s.io/enhancements/keps/sig-node/5573-remove-cgroup-v1"

// recordStartEvents records the events a kubelet records about its node as
// it starts: PossibleMemoryBackedVolumesOnDisk on a node with swap whose
// tmpfs cannot be kept out of it (NewContainerManager), Starting, and
// CgroupV1 on a cgroup v1 host (cgroupVersionCheck).
func (b *builder) recordStartEvents(rec apiserver.NodeEventRecorder) {
	if on, err := kuberuntime.SwapOn("/proc/swaps"); err == nil && on && !kuberuntime.TmpfsNoswapSupported(podsDir(b.cfg)) {
		rec.Event(v1.EventTypeWarning, apiserver.PossibleMemoryBackedVolumesOnDisk,
			"The tmpfs noswap option is not supported. Memory-backed volumes (e.g. secrets, emptyDirs, etc.) "+
				"might be swapped to disk and should no longer be considered secure.")
	}
	rec.Event(v1.EventTypeNormal, apiserver.NodeStarting, "Starting splitlet.")
	if root := b.cfg.CgroupRoot; root != "" && cm.V1(root) {
		rec.Event(v1.EventTypeWarning, apiserver.NodeCgroupV1, cgroupV1Warning)
	}
}

// nodeOptions is the Node sync registers.
func (b *builder) nodeOptions() apiserver.NodeOptions {
	cfg := b.cfg
	opts := apiserver.NodeOptions{
		Name:       cfg.NodeName,
		Labels:     cfg.NodeLabels,
		Taints:     cfg.RegisterWithTaints,
		Report:     nodeReport(b.admission),
		Addresses:  apiserver.NodeAddresses(cfg.NodeIPs, hostname()),
		Runtime:    b.rt,
		Images:     b.images,
		SystemInfo: systemInfo(),
	}
	if b.api != nil {
		// The API server's proxy (kubectl logs) dials
		// https://<node address>:<this port>.
		opts.KubeletPort = b.api.port()
		if len(cfg.NodeIPs) == 0 {
			b.log.Warn("no --node-ip: the Node reports no InternalIP, so an API server preferring InternalIP (kubeadm's) cannot reach the node API")
		}
	}
	return opts
}

// buildServers makes the PodService's server and, with --metrics, the
// ops server, and binds their listeners.
func (b *builder) buildServers(context.Context) error {
	cfg := b.cfg
	mux := http.NewServeMux()
	path, handler := server.NewHandler(server.New(b.apiSource, b.pods, b.recorder, b.rt),
		connect.WithInterceptors(logInterceptor(b.log), endStreams(b.d.streams)),
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
	addOps(mux, b.reg, cfg.Profiling)
	podLn, err := cfg.Listen.Listener()
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen.Address, err)
	}
	b.d.servers = append(b.d.servers, httpServer{name: "PodService", srv: newHTTPServer(mux), ln: podLn})
	if cfg.MetricsAddr != "" {
		ops := http.NewServeMux()
		addOps(ops, b.reg, cfg.Profiling)
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics %s: %w", cfg.MetricsAddr, err)
		}
		b.d.servers = append(b.d.servers, httpServer{name: "metrics", srv: newHTTPServer(ops), ln: ln})
	}
	return nil
}

// podsDir holds each pod's volumes and containers' files.
func podsDir(cfg config.Config) string {
	return filepath.Join(cfg.StateDir, "pods")
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

// endStreams ends the PodService's streams (Watch, Logs with follow) when
// done closes: http.Server.Shutdown waits for every request, and a
// stream, which never ends by itself, would hold it for the whole
// shutdown timeout. Unary calls are left to finish.
func endStreams(done <-chan struct{}) connect.Interceptor {
	return streamEnder(done)
}

type streamEnder <-chan struct{}

func (e streamEnder) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc { return next }

func (e streamEnder) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (e streamEnder) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-e:
				cancel()
			case <-ctx.Done():
			}
		}()
		return next(ctx, conn)
	}
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

// podCgroups returns the remover of pod cgroups under --cgroup-root, or
// nil (no removal) when it is empty or the runtime is on the systemd
// driver, whose pod slices are systemd units that only systemd should stop
// (the kubelet asks it over D-Bus, which sync does not do).
func (b *builder) podCgroups() syncloop.PodCgroupRemover {
	if b.cfg.CgroupRoot == "" {
		return nil
	}
	if b.cgroupDriver == kuberuntime.SystemdDriver {
		b.log.Info("the runtime uses the systemd cgroup driver: pod slices are left to systemd")
		return nil
	}
	return cm.New(b.cfg.CgroupRoot)
}

// buildCgroups makes the QoS cgroups and the pod cgroup manager
// (--cgroups-per-qos), the kubelet's qosContainerManager.Start and
// podContainerManager, or leaves pod cgroups to the runtime: when that is
// off, when the runtime is on the systemd driver (the kubelet makes pod
// slices through systemd over D-Bus, which sync does not do), when
// --cgroup-root is not /sys/fs/cgroup, or when it cannot be written to, as
// in a container given a read-only cgroupfs; the last three with a
// warning. QoS cgroups that cannot be made fail the start, as the
// kubelet's.
func (b *builder) buildCgroups(context.Context) error {
	cfg := b.cfg
	switch {
	case !cfg.CgroupsPerQOS:
		return nil
	case b.cgroupDriver == kuberuntime.SystemdDriver:
		b.log.Warn("pod cgroups get no pod-level limits on the systemd cgroup driver: the runtime makes them without any")
		return nil
	case filepath.Clean(cfg.CgroupRoot) != cm.MountRoot:
		// opencontainers/cgroups finds the hierarchies where the process
		// sees them mounted, which is what --cgroup-root must name.
		b.log.Warn("pod cgroups get no pod-level limits: they are made under "+cm.MountRoot+" only", zap.String("cgroupRoot", cfg.CgroupRoot))
		return nil
	}
	if err := cm.Writable(cfg.CgroupRoot); err != nil {
		b.log.Warn("pod cgroups get no pod-level limits: the cgroupfs cannot be written to", zap.Error(err))
		return nil
	}
	// The sync loop, built later, holds the active pods.
	b.qosCgroups = cm.NewQOSContainerManager(cm.QOSRoot, func() []*v1.Pod { return b.kubelet.GetActivePods() })
	if err := b.qosCgroups.Start(); err != nil {
		return err
	}
	name := func(pod *v1.Pod) string { return kuberuntime.CgroupfsPodCgroupParent(pod, qos.GetPodQOS(pod)) }
	b.podCgroupManager = cm.NewPodContainerManager(name, cfg.CPUCFSQuota, uint64(cfg.CPUCFSQuotaPeriod/time.Microsecond), b.qosCgroups)
	return nil
}

// mirrorSetter is m as a MirrorSetter, nil (mirror pods dropped) when
// there is no MirrorManager.
func mirrorSetter(m *apiserver.MirrorManager) apiserver.MirrorSetter {
	if m == nil {
		return nil
	}
	return m
}
