// Package syncloop is the heart of splitlet-sync: the kubelet's syncLoop
// (pkg/kubelet/kubelet.go) rebuilt. It reads merged pod updates from the
// sources (HandlePodAdditions, HandlePodUpdates, HandlePodRemoves, ...),
// wakes pod workers on runtime lifecycle events (package pleg), and runs
// housekeeping (HandlePodCleanups), while the pod workers call back into
// SyncPod, SyncTerminatingPod and SyncTerminatedPod (sync.go), which drive
// the runtime through kuberuntime and publish the pod's status.
//
// New pods are admitted before their workers start (canadmitpod.go): sync
// itself refuses pods setting sysctls the node does not allow
// (SysctlForbidden), then the Admitter (splitlet-admission through
// internal/admission, or AlwaysAdmit)
// may reject a pod (rejectPod), name preemption victims, which are killed
// with the kubelet's preemption status first (killpodnow.go), or fail, in
// which case the pod waits with status reason AdmissionUnavailable and is
// retried (failure policy Fail) or is admitted (Ignore). EvictPod carries
// out the eviction manager's evictions.
//
// Usage sketch:
//
//	k := syncloop.New(syncloop.Options{...}, podConfig, podManager, runtimeManager, criClient)
//	err := k.Run(ctx) // until ctx ends
package syncloop

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/allocation"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/pleg"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/prober"
	"github.com/splitlet/splitlet/services/sync/internal/source"
	"github.com/splitlet/splitlet/services/sync/internal/status"
	"github.com/splitlet/splitlet/services/sync/internal/sysctl"
	"github.com/splitlet/splitlet/services/sync/internal/worker"
)

// Runtime is what the sync loop needs of kuberuntime.Manager, all of it
// required: test fakes implement it in full, so tests take the paths
// production takes.
type Runtime interface {
	// GetPodStatus reads a pod's status, listing its sandboxes and
	// containers; GetPodStatusOf reads the status of given ones without
	// listing; GeneratePodStatus builds the status a container event
	// carries without a call (statuscache.go, package pleg).
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error)
	GetPodStatusOf(ctx context.Context, uid types.UID, name, namespace string, objs kuberuntime.PodObjects) (*container.PodStatus, error)
	GeneratePodStatus(ctx context.Context, ev *runtimeapi.ContainerEventResponse) (*container.PodStatus, error)
	// SyncPod makes the runtime match the pod and says what it did.
	SyncPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, probes kuberuntime.ProbeResults, restartAllContainers bool) (kuberuntime.SyncResult, error)
	KillPod(ctx context.Context, pod *v1.Pod, uid types.UID, gracePeriodOverride *int64) error
	RemovePod(ctx context.Context, uid types.UID) error
	GetPods(ctx context.Context) (map[types.UID]*kuberuntime.RunningPod, error)
	GarbageCollect(ctx context.Context) error
	// DeleteAllUnusedContainers is GarbageCollect that also empties the
	// pods terminated names (DeleteAllUnusedContainers below).
	DeleteAllUnusedContainers(ctx context.Context, terminated func(types.UID) bool) error
	ContainerWaiting(uid types.UID, name string) (kuberuntime.WaitingReason, bool)
	// SupportsRecursiveReadOnlyMounts says whether the pod's runtime
	// handler supports recursive read-only mounts, for its status.
	SupportsRecursiveReadOnlyMounts(ctx context.Context, pod *v1.Pod) bool
	ForgetPod(uid types.UID)
	GC()
}

var _ Runtime = (*kuberuntime.Manager)(nil)

// Finalizer is told when a deleted pod has terminated, so its source can
// forget it (the API source deletes it from the store). The kubelet's
// status manager does this by deleting the pod from the API server.
type Finalizer interface {
	Finalize(ctx context.Context, namespace, name string, uid types.UID) error
}

// Options configure the sync loop.
type Options struct {
	// ResyncInterval is how long after a successful sync a pod is synced
	// again without any event (the kubelet's --sync-frequency, 1 min, is
	// the flag's default; unset here it is 10 s, for tests).
	ResyncInterval time.Duration
	// BackOffPeriod is how long after a failed sync (including a restart
	// refused by CrashLoopBackOff) the pod is retried (the kubelet's
	// backOffPeriod, 10 s).
	BackOffPeriod time.Duration
	// RelistInterval is the PLEG relist period (the kubelet's 1 s).
	RelistInterval time.Duration
	// EventedRelistInterval is the PLEG relist period while the runtime's
	// container event stream is live (the kubelet's
	// eventedPlegRelistPeriod, 300 s); RelistInterval applies again as
	// soon as the stream fails or when the runtime has none.
	EventedRelistInterval time.Duration
	// ContainerGCPeriod is the period of dead-container garbage collection
	// (the kubelet's ContainerGCPeriod, 1 min).
	ContainerGCPeriod time.Duration
	// HousekeepingInterval is the cleanup period (the kubelet's 2 s).
	HousekeepingInterval time.Duration
	// PodCgroups removes the cgroups of pods housekeeping removed
	// (*cm.PodCgroups); nil removes none.
	PodCgroups PodCgroupRemover
	// HostIPs are the node's IPs for pod statuses.
	HostIPs []string
	// KeptStatus returns the status a previous run of sync last generated
	// for a pod (statuskeep), the old status of a pod's first sync after a
	// restart; nil keeps none.
	KeptStatus func(types.UID) (v1.PodStatus, bool)
	// Sysctls are the sysctls pods may set (the safe ones and the
	// operator's --allowed-unsafe-sysctls); sync refuses every other new
	// pod before asking the Admitter (rejectLocally). Nil allows
	// the safe sysctls of the running kernel.
	Sysctls *sysctl.Allowlist
	// Admitter decides on new pods; nil admits all.
	Admitter Admitter
	// AdmissionFailurePolicy says what happens to a new pod when the
	// Admitter fails: Fail (the default) keeps it pending and retries,
	// Ignore admits it.
	AdmissionFailurePolicy FailurePolicy
	// AdmitRetryInitial and AdmitRetryMax bound the back-off of admission
	// retries for pending pods (defaults 1 s and 16 s).
	AdmitRetryInitial time.Duration
	AdmitRetryMax     time.Duration
	// Finalizers by source name.
	Finalizers map[string]Finalizer
	// Metrics; nil creates unregistered ones.
	Metrics *Metrics
	// Recorder records pod events; nil records none.
	Recorder Recorder
	// Prober runs the pods' probes; nil runs none (every probe result is
	// unknown, so containers count as started and ready).
	Prober Prober
	// Network says whether the pod network is ready (*runtimestate.State);
	// nil takes it as ready.
	Network Network
	// Allocation keeps the pods' allocated resources for in-place resize
	// (persisted in production); nil keeps them in memory.
	Allocation *allocation.Manager
}

// Network is the runtime's network readiness as the sync loop reads it.
type Network interface {
	// NetworkErrors is why the pod network is not ready, or nil.
	NetworkErrors() error
}

// Prober is the probe manager as the sync loop uses it (*prober.Manager):
// pods are added on admission and removed when they terminate; liveness and
// startup results feed computePodActions; UpdatePodStatus sets the
// containers' started and ready fields in each generated status; result changes arrive on the results managers' Updates channels,
// which the sync loop drains.
type Prober interface {
	kuberuntime.ProbeResults
	AddPod(pod *v1.Pod)
	RemovePod(pod *v1.Pod)
	CleanupPods(desired map[types.UID]struct{})
	status.Probes
	LivenessResults() *prober.ResultsManager
	ReadinessResults() *prober.ResultsManager
	StartupResults() *prober.ResultsManager
}

var _ Prober = (*prober.Manager)(nil)

// Recorder is the event recorder the sync loop uses: it records events and
// is told when a pod is gone (*events.Recorder).
type Recorder interface {
	events.EventRecorder
	Forget(namespace, name string)
}

var _ Recorder = (*events.Recorder)(nil)

// noRecorder drops every event.
type noRecorder struct{}

func (noRecorder) Event(*v1.Pod, string, string, string)                           {}
func (noRecorder) Eventf(*v1.Pod, string, string, string, ...any)                  {}
func (noRecorder) EventfContainer(*v1.Pod, string, string, string, string, ...any) {}
func (noRecorder) Forget(string, string)                                           {}

// Kubelet runs the sync loop. Its methods are safe for concurrent use.
type Kubelet struct {
	opts       Options
	config     *source.PodConfig
	podManager *podmanager.Manager
	runtime    Runtime
	pleg       *pleg.PLEG
	workers    *worker.PodWorkers
	// statuses are the pods' runtime statuses and the rule by which a
	// sync reuses them (statuscache.go).
	statuses *statusCache
	// runtimePods is the latest node-wide listing, for housekeeping's
	// orphan scan (the kubelet's runtimeCache), fed by the PLEG's relists.
	runtimePods *runtimeCache
	// cgroupsLeft counts, per pod housekeeping removed, the passes that
	// could not yet remove its cgroups. Only the sync loop touches it.
	cgroupsLeft map[types.UID]int

	mu sync.Mutex
	// firstSeen is when each pod was first seen, for the start duration
	// metric; an entry is dropped once the pod has been seen running.
	firstSeen map[types.UID]time.Time
	// rejected pods were refused admission and have no worker.
	rejected map[types.UID]bool
	// pendingAdmission pods wait because admission could not be asked;
	// they have no worker yet.
	pendingAdmission map[types.UID]bool
	// startSpans are the open root spans of pods on their way from the
	// sources to their first sync (podstart_trace.go); empty without
	// tracing.
	startSpans map[types.UID]trace.Span
	// terminal holds the status imposed on pods the node kills itself
	// (preemption victims, evicted pods).
	terminal map[types.UID]*terminalStatus
	// activeDeadline fails pods past their activeDeadlineSeconds.
	activeDeadline *activeDeadlineHandler
	// admitRetry fires when pending admissions should be retried;
	// admitRetryArmed says a retry is scheduled, admitRetryDelay is the
	// next back-off delay.
	admitRetry      chan struct{}
	admitRetryArmed bool
	admitRetryDelay time.Duration
	// resizeErrs holds why a pod's last in-place resize failed.
	resizeErrs map[types.UID]string
	// resizeRetryDue says deferred resizes should be asked again at the
	// next housekeeping pass (a pod went away, or a resize was granted);
	// resizeRetryAt is when they are asked again anyway. Only the sync
	// loop goroutine touches them.
	resizeRetryDue bool
	resizeRetryAt  time.Time

	// alloc holds the pods' allocations (Options.Allocation).
	alloc *allocation.Manager
}

// New returns a sync loop reading config, keeping pods in podManager and
// acting through rt; cri is the runtime client the PLEG lists with.
func New(opts Options, config *source.PodConfig, podManager *podmanager.Manager, rt Runtime, cri runtimeapi.RuntimeServiceClient) *Kubelet {
	if opts.Admitter == nil {
		opts.Admitter = AlwaysAdmit{}
	}
	if opts.Sysctls == nil {
		kernel, _ := sysctl.KernelVersion() // unknown: the sysctls safe in every kernel
		opts.Sysctls, _ = sysctl.NewAllowlist(sysctl.SafeSysctlAllowlist(kernel))
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	if opts.Recorder == nil {
		opts.Recorder = noRecorder{}
	}
	if opts.RelistInterval <= 0 {
		opts.RelistInterval = time.Second
	}
	if opts.EventedRelistInterval <= 0 {
		opts.EventedRelistInterval = 300 * time.Second
	}
	if opts.ContainerGCPeriod <= 0 {
		opts.ContainerGCPeriod = time.Minute
	}
	if opts.HousekeepingInterval <= 0 {
		opts.HousekeepingInterval = 2 * time.Second
	}
	if opts.ResyncInterval <= 0 {
		opts.ResyncInterval = 10 * time.Second
	}
	if opts.BackOffPeriod <= 0 {
		opts.BackOffPeriod = 10 * time.Second
	}
	if opts.AdmissionFailurePolicy == "" {
		opts.AdmissionFailurePolicy = FailurePolicyFail
	}
	if opts.AdmitRetryInitial <= 0 {
		opts.AdmitRetryInitial = time.Second
	}
	if opts.AdmitRetryMax < opts.AdmitRetryInitial {
		opts.AdmitRetryMax = max(16*time.Second, opts.AdmitRetryInitial)
	}
	if opts.Allocation == nil {
		opts.Allocation, _ = allocation.New("")
	}
	k := &Kubelet{
		opts: opts, config: config, podManager: podManager, runtime: rt,
		alloc:            opts.Allocation,
		resizeErrs:       map[types.UID]string{},
		statuses:         newStatusCache(rt),
		firstSeen:        map[types.UID]time.Time{},
		rejected:         map[types.UID]bool{},
		pendingAdmission: map[types.UID]bool{},
		startSpans:       map[types.UID]trace.Span{},
		terminal:         map[types.UID]*terminalStatus{},
		admitRetry:       make(chan struct{}, 1),
		admitRetryDelay:  opts.AdmitRetryInitial,
	}
	k.activeDeadline = newActiveDeadlineHandler(podManager.GetPodStatus, opts.Recorder, time.Now)
	k.runtimePods = newRuntimeCache(rt.GetPods, runtimeCacheRefreshPeriod)
	k.cgroupsLeft = map[types.UID]int{}
	k.pleg = pleg.New(pleg.Options{
		CRI: cri, Runtime: rt, Cache: k.statuses.cache,
		RelistPeriod: opts.RelistInterval, EventedRelistPeriod: opts.EventedRelistInterval,
		Metrics: opts.Metrics.PLEG,
		Wanted:  k.hasPod, Syncing: k.statuses.isSyncing,
		Listed: func(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, listedAt time.Time) {
			k.runtimePods.set(kuberuntime.GroupRunningPods(sandboxes, containers), listedAt)
		},
	})
	k.statuses.listing = k.pleg
	return k
}

// hasPod reports whether sync handles the pod (a source has it or a worker
// runs it): the PLEG keeps the runtime status of such pods only.
func (k *Kubelet) hasPod(uid types.UID) bool {
	return k.podManager.GetPodByUID(uid) != nil || (k.workers != nil && k.workers.IsKnown(uid))
}

// Run starts the pod workers and the PLEG and runs the sync loop until ctx
// ends, then waits for the workers to return.
func (k *Kubelet) Run(ctx context.Context) error {
	k.workers = worker.New(ctx, k, k.opts.ResyncInterval, k.opts.BackOffPeriod, func(t worker.UpdateType, d time.Duration) {
		k.opts.Metrics.PodWorkerDuration.WithLabelValues(t.String()).Observe(d.Seconds())
	})
	go k.pleg.Run(ctx)
	go k.runContainerGC(ctx)
	k.syncLoop(ctx)
	k.workers.Wait()
	return nil
}

// syncLoop is the kubelet's syncLoop / syncLoopIteration: config updates,
// lifecycle events and housekeeping, one at a time. Periodic resyncs are
// scheduled by the pod workers themselves (the kubelet's work queue).
func (k *Kubelet) syncLoop(ctx context.Context) {
	log := logctx.From(ctx)
	housekeeping := time.NewTicker(k.opts.HousekeepingInterval)
	defer housekeeping.Stop()
	// The kubelet's syncCh: once a second, the pods that must be synced
	// now (past their active deadline).
	syncTicker := time.NewTicker(time.Second)
	defer syncTicker.Stop()
	// Without a prober these stay nil and never fire.
	var liveness, readiness, startup <-chan prober.Update
	if k.opts.Prober != nil {
		liveness = k.opts.Prober.LivenessResults().Updates()
		readiness = k.opts.Prober.ReadinessResults().Updates()
		startup = k.opts.Prober.StartupResults().Updates()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-k.config.Updates():
			log.Debug("pod update", zap.String("op", u.Op.String()), zap.String("source", u.Source), zap.Int("pods", len(u.Pods)))
			switch u.Op {
			case source.ADD:
				k.HandlePodAdditions(ctx, u.Pods)
			case source.UPDATE, source.DELETE:
				// A DELETE is a graceful deletion: an update carrying the
				// deletion timestamp, as in the kubelet.
				k.HandlePodUpdates(ctx, u.Pods)
			case source.REMOVE:
				k.HandlePodRemoves(ctx, u.Pods)
			case source.RECONCILE:
				k.HandlePodReconcile(ctx, u.Pods)
			}
		case <-k.pleg.Ready():
			for _, uid := range k.pleg.Take() {
				if k.podManager.GetPodByUID(uid) != nil || k.workers.IsKnown(uid) {
					k.workers.Wake(uid)
				}
			}
		// A probe result change syncs the pod: a liveness or startup
		// failure may kill the container, and readiness and startup show in
		// the status the sync regenerates (the kubelet's handleProbeSync).
		case u := <-liveness:
			k.workers.Wake(u.PodUID)
		case u := <-readiness:
			k.workers.Wake(u.PodUID)
		case u := <-startup:
			k.workers.Wake(u.PodUID)
		case <-syncTicker.C:
			for _, pod := range k.getPodsToSync() {
				k.workers.Wake(pod.UID)
			}
		case <-k.admitRetry:
			k.retryPendingAdmissions(ctx)
		case <-housekeeping.C:
			if !k.config.SeenAllSources() {
				// A pod whose source has not spoken yet is not an orphan.
				continue
			}
			k.HandlePodCleanups(ctx)
		}
	}
}
