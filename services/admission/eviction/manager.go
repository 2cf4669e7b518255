package eviction

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// ImmediateEvictionGracePeriodSeconds is the grace period a pod gets when a
// hard threshold is met: the kubelet's immediateEvictionGracePeriodSeconds,
// which is 1 in current kubelets (older ones passed 0).
const ImmediateEvictionGracePeriodSeconds int64 = 1

// Default timings of Run, as the kubelet's podCleanupTimeout and
// podCleanupPollFreq.
const (
	DefaultPodCleanupTimeout  = 30 * time.Second
	DefaultPodCleanupPollFreq = time.Second
)

// subscriberBuffer is how many evictions a slow subscriber may fall behind
// before evictions are dropped for it. The manager evicts at most one pod a
// cycle and waits for it to go, so the buffer only fills when a subscriber
// has stopped reading.
const subscriberBuffer = 64

// Eviction asks sync to stop a pod because the node is short of a resource.
// Sync stops the pod with GracePeriodOverride, marks it Failed with Reason
// and Message, and adds Condition to its status, as the kubelet's
// evictPod asks TerminatePodAbnormallyAndWait to.
type Eviction struct {
	// Pod is the pod as activePods returned it.
	Pod *v1.Pod
	// Reason is always "Evicted".
	Reason string
	// Message is the kubelet's evictionMessage.
	Message string
	// Annotations are the kubelet's eviction event annotations
	// (offending_containers, starved_resource, ...).
	Annotations map[string]string
	// Signal is the signal whose threshold was met.
	Signal Signal
	// GracePeriodOverride is in seconds: ImmediateEvictionGracePeriodSeconds
	// for a hard threshold, Config.MaxPodGracePeriodSeconds for a soft one.
	GracePeriodOverride int64
	// Condition is the DisruptionTarget pod condition the kubelet adds.
	Condition v1.PodCondition
	// Time is when the manager decided the eviction.
	Time time.Time
}

// ActivePodsFunc returns the pods currently admitted and not yet terminated
// (the kubelet's ActivePodsFunc). The manager sorts a copy of the slice.
type ActivePodsFunc func() []*v1.Pod

// Clock tells the time; tests inject their own.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Config configures the eviction manager, as the kubelet's eviction.Config.
type Config struct {
	// Thresholds come from ParseThresholdConfig or ParseThresholdFlags.
	Thresholds []Threshold
	// PressureTransitionPeriod is how long a pressure condition stays after
	// its last met threshold (--eviction-pressure-transition-period). Zero
	// means DefaultPressureTransitionPeriod.
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds is the grace period for evictions caused by
	// soft thresholds (--eviction-max-pod-grace-period).
	MaxPodGracePeriodSeconds int64
	// DedicatedImageFs says the runtime's image filesystem is not the node
	// filesystem, which changes what each disk signal's ranking counts
	// (MachineSource.HasDedicatedImageFs tells).
	DedicatedImageFs bool
	// PodCleanupTimeout and PodCleanupPollFreq bound how long Run waits for
	// an evicted pod to leave the active pods; zero means the defaults.
	PodCleanupTimeout  time.Duration
	PodCleanupPollFreq time.Duration
	// NodeReclaimTimeout bounds how long a cycle waits for sync to report
	// a node-level reclaim (SubscribeReclaims) before it evicts a pod;
	// zero means DefaultNodeReclaimTimeout.
	NodeReclaimTimeout time.Duration
	// Clock defaults to the wall clock.
	Clock Clock
}

// Manager observes node pressure and picks pods to evict, as the kubelet's
// eviction managerImpl. It never stops pods itself: it publishes evictions
// to subscribers (sync watches them over a stream), so admission never
// calls sync.
type Manager struct {
	cfg      Config
	provider SummaryProvider
	clock    Clock
	ranks    map[Signal]rankFunc
	// nodeReclaims says what node-level reclaim each disk signal asks of
	// sync before a pod is evicted for it.
	nodeReclaims map[Signal]NodeReclaim

	// syncMu serialises Synchronize; the kubelet has one goroutine.
	syncMu sync.Mutex

	mu                           sync.RWMutex
	nodeConditions               []v1.NodeConditionType
	nodeConditionsLastObservedAt nodeConditionsObservedAt
	thresholdsFirstObservedAt    thresholdsObservedAt
	thresholdsMet                []Threshold
	lastObservations             map[Signal]SignalObservation
	conditionStates              map[v1.NodeConditionType]*nodeConditionState

	subMu       sync.Mutex
	subscribers map[chan Eviction]struct{}

	// reclaimMu guards the reclaim subscribers and the requests awaiting
	// their report (reclaim.go).
	reclaimMu      sync.Mutex
	reclaimSubs    map[chan ReclaimRequest]struct{}
	reclaimPending map[string]chan ReclaimReport
}

var _ PressureSource = (*Manager)(nil)

// NewManager returns a manager that reads observations from provider.
func NewManager(cfg Config, provider SummaryProvider) *Manager {
	if cfg.PressureTransitionPeriod == 0 {
		cfg.PressureTransitionPeriod = DefaultPressureTransitionPeriod
	}
	if cfg.PodCleanupTimeout == 0 {
		cfg.PodCleanupTimeout = DefaultPodCleanupTimeout
	}
	if cfg.PodCleanupPollFreq == 0 {
		cfg.PodCleanupPollFreq = DefaultPodCleanupPollFreq
	}
	if cfg.NodeReclaimTimeout == 0 {
		cfg.NodeReclaimTimeout = DefaultNodeReclaimTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	cfg.Thresholds = slices.Clone(cfg.Thresholds)
	now := cfg.Clock.Now()
	states := map[v1.NodeConditionType]*nodeConditionState{}
	for _, c := range pressureConditions {
		states[c] = &nodeConditionState{status: v1.ConditionFalse, lastHeartbeatTime: now, lastTransitionTime: now}
	}
	return &Manager{
		cfg:                          cfg,
		provider:                     provider,
		clock:                        cfg.Clock,
		ranks:                        buildSignalToRankFunc(cfg.DedicatedImageFs),
		nodeReclaims:                 signalToNodeReclaim(cfg.DedicatedImageFs),
		nodeConditionsLastObservedAt: nodeConditionsObservedAt{},
		thresholdsFirstObservedAt:    thresholdsObservedAt{},
		conditionStates:              states,
		subscribers:                  map[chan Eviction]struct{}{},
		reclaimSubs:                  map[chan ReclaimRequest]struct{}{},
		reclaimPending:               map[string]chan ReclaimReport{},
	}
}

// NodeConditions implements PressureSource: the pressure conditions in
// force, MemoryPressure, DiskPressure, PIDPressure in that order.
func (m *Manager) NodeConditions(context.Context) []v1.NodeConditionType {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Clone(m.nodeConditions)
}

// Conditions returns the MemoryPressure, DiskPressure and PIDPressure node
// conditions with the reasons and messages the kubelet writes, for the node
// status. The heartbeat is the last Synchronize; the transition time moves
// only when a status changes.
func (m *Manager) Conditions() []v1.NodeCondition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return conditionsFromStates(m.conditionStates)
}

// Subscribe returns a channel that receives every eviction decided from now
// on. The channel is closed when ctx is done. A subscriber that falls more
// than 64 evictions behind loses evictions (logged); the manager evicts the
// pod again on a later cycle if the pressure remains.
func (m *Manager) Subscribe(ctx context.Context) <-chan Eviction {
	ch := make(chan Eviction, subscriberBuffer)
	m.subMu.Lock()
	m.subscribers[ch] = struct{}{}
	m.subMu.Unlock()
	go func() {
		<-ctx.Done()
		m.subMu.Lock()
		delete(m.subscribers, ch)
		close(ch)
		m.subMu.Unlock()
	}()
	return ch
}

func (m *Manager) publish(ctx context.Context, ev Eviction) {
	m.subMu.Lock()
	defer m.subMu.Unlock()
	for ch := range m.subscribers {
		select {
		case ch <- ev:
		default:
			logctx.From(ctx).Error("eviction manager: subscriber is not reading; eviction dropped for it",
				zap.String("pod", ev.Pod.Namespace+"/"+ev.Pod.Name))
		}
	}
}

// Synchronize runs one eviction cycle, as the kubelet's synchronize: observe,
// find the thresholds met (keeping earlier ones until their minimum reclaim
// is satisfied), update the node conditions with the transition period,
// keep the thresholds whose grace period has passed and whose stats are
// fresh, pick the resource to reclaim (memory first), ask sync for
// node-level reclaim when the signal is a disk's (reclaim.go) and stop if
// that cleared every threshold, else rank the active pods for it and evict
// the first one that is not critical. At most one pod is
// evicted per cycle, so the node can settle before the next decision.
//
// It returns the evictions it published (none or one). An error means the
// observation failed and nothing changed.
func (m *Manager) Synchronize(ctx context.Context, activePods ActivePodsFunc) ([]Eviction, error) {
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	log := logctx.From(ctx)

	if len(m.cfg.Thresholds) == 0 {
		return nil, nil
	}
	pods := slices.Clone(activePods())
	summary, err := m.provider.Observe(ctx)
	if err != nil {
		return nil, fmt.Errorf("eviction manager: observing the node: %w", err)
	}
	observations := summary.Signals
	stats := cachedStatsFunc(summary.Pods)

	m.mu.RLock()
	previouslyMet := m.thresholdsMet
	lastFirstObservedAt := m.thresholdsFirstObservedAt
	lastConditionsObservedAt := m.nodeConditionsLastObservedAt
	lastObservations := m.lastObservations
	m.mu.RUnlock()

	thresholds := thresholdsMet(m.cfg.Thresholds, observations, false)
	if len(previouslyMet) > 0 {
		thresholds = mergeThresholds(thresholds, thresholdsMet(previouslyMet, observations, true))
	}

	now := m.clock.Now()
	firstObservedAt := thresholdsFirstObservedAt(thresholds, lastFirstObservedAt, now)
	conditionsObservedAt := nodeConditionsLastObservedAt(nodeConditions(thresholds), lastConditionsObservedAt, now)
	conditions := nodeConditionsObservedSince(conditionsObservedAt, m.cfg.PressureTransitionPeriod, now)
	thresholds = thresholdsMetGracePeriod(thresholds, firstObservedAt, now)

	m.mu.Lock()
	if !slices.Equal(m.nodeConditions, conditions) {
		log.Info("eviction manager: node pressure conditions changed", zap.Any("nodeConditions", conditions))
	}
	m.nodeConditions = conditions
	m.thresholdsFirstObservedAt = firstObservedAt
	m.nodeConditionsLastObservedAt = conditionsObservedAt
	m.thresholdsMet = thresholds
	m.lastObservations = observations
	updateConditionStates(m.conditionStates, conditions, now)
	m.mu.Unlock()

	thresholds = thresholdsUpdatedStats(thresholds, observations, lastObservations)
	if len(thresholds) == 0 {
		return nil, nil
	}

	sortByEvictionPriority(thresholds)
	toReclaim := thresholds[0]
	resourceToReclaim := signalToResource[toReclaim.Signal]
	log.Info("eviction manager: attempting to reclaim", zap.String("resourceName", string(resourceToReclaim)),
		zap.Stringer("threshold", toReclaim))
	// Dead containers and unused images may free a disk signal without
	// evicting anyone: sync garbage collects them on request.
	if m.reclaimNodeLevelResources(ctx, toReclaim.Signal, resourceToReclaim) {
		log.Info("eviction manager: able to reduce resource pressure without evicting pods",
			zap.String("resourceName", string(resourceToReclaim)))
		return nil, nil
	}
	log.Info("eviction manager: must evict pod(s) to reclaim", zap.String("resourceName", string(resourceToReclaim)))

	rank, ok := m.ranks[toReclaim.Signal]
	if !ok {
		return nil, nil
	}
	if len(pods) == 0 {
		log.Error("eviction manager: eviction thresholds have been met, but no pods are active to evict")
		return nil, nil
	}
	rank(pods, stats)

	gracePeriod := ImmediateEvictionGracePeriodSeconds
	if !isHardEvictionThreshold(toReclaim) {
		gracePeriod = m.cfg.MaxPodGracePeriodSeconds
	}
	for _, pod := range pods {
		// The kubelet's evictPod refuses critical pods: static pods are
		// not re-admitted after eviction and the node needs the others.
		if lifecycle.IsCriticalPod(pod) {
			log.Error("eviction manager: cannot evict a critical pod", zap.String("pod", pod.Namespace+"/"+pod.Name))
			continue
		}
		message, annotations := evictionMessage(resourceToReclaim, pod, stats, thresholds, observations)
		ev := Eviction{
			Pod:                 pod,
			Reason:              Reason,
			Message:             message,
			Annotations:         annotations,
			Signal:              toReclaim.Signal,
			GracePeriodOverride: gracePeriod,
			Condition: v1.PodCondition{
				Type:    v1.DisruptionTarget,
				Status:  v1.ConditionTrue,
				Reason:  v1.PodReasonTerminationByKubelet,
				Message: message,
			},
			Time: now,
		}
		log.Info("eviction manager: evicting pod", zap.String("pod", pod.Namespace+"/"+pod.Name),
			zap.String("podUID", string(pod.UID)), zap.String("message", message))
		m.publish(ctx, ev)
		return []Eviction{ev}, nil
	}
	log.Info("eviction manager: unable to evict any pods from the node")
	return nil, nil
}

// Run synchronizes every interval until ctx is done, as the kubelet's
// managerImpl.Start. After an eviction it waits (up to PodCleanupTimeout)
// for the evicted pod to leave activePods and then synchronizes at once,
// because the pressure may need another eviction; the wait keeps it from
// evicting a second pod on usage the first one still holds.
func (m *Manager) Run(ctx context.Context, activePods ActivePodsFunc, interval time.Duration) {
	log := logctx.From(ctx)
	for ctx.Err() == nil {
		evicted, err := m.Synchronize(ctx, activePods)
		if err == nil && len(evicted) > 0 {
			m.waitForPodsCleanup(ctx, activePods, evicted)
			continue
		}
		if err != nil {
			log.Error("eviction manager: failed to synchronize", zap.Error(err))
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// waitForPodsCleanup is the kubelet's waitForPodsCleanup, with "cleaned up"
// meaning "no longer among the active pods".
func (m *Manager) waitForPodsCleanup(ctx context.Context, activePods ActivePodsFunc, evicted []Eviction) {
	timeout := time.NewTimer(m.cfg.PodCleanupTimeout)
	defer timeout.Stop()
	ticker := time.NewTicker(m.cfg.PodCleanupPollFreq)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timeout.C:
			logctx.From(ctx).Info("eviction manager: timed out waiting for evicted pods to be cleaned up")
			return
		case <-ticker.C:
			active := map[types.UID]bool{}
			for _, p := range activePods() {
				active[p.UID] = true
			}
			if !slices.ContainsFunc(evicted, func(e Eviction) bool { return active[e.Pod.UID] }) {
				return
			}
		}
	}
}
