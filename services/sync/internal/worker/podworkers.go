// Package worker runs one goroutine per pod, as the kubelet's pod workers
// (pkg/kubelet/pod_workers.go): a pod moves from syncing to terminating to
// terminated, never back; updates that arrive while the worker is busy are
// coalesced, the newest replacing an older pending one; a termination's grace
// period can only shrink, and a shorter one interrupts a termination in
// progress so it restarts with the new deadline.
//
// The sync loop calls UpdatePod for every change of a pod (config update,
// runtime event, periodic resync); the worker calls the SyncHandler:
//
//	SyncPod            while the pod should run (returns isTerminal once the
//	                   pod is done: all containers finished for good);
//	SyncTerminatingPod once termination is requested, until it succeeds;
//	SyncTerminatedPod  once, after the pod's containers are stopped.
package worker

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/tracing"
)

// UpdateType says why a pod is synced. The values match the kubelet's
// kubetypes.SyncPodType.
type UpdateType int

const (
	// SyncPodSync is a periodic or event-driven resync.
	SyncPodSync UpdateType = iota
	// SyncPodUpdate is a change of the pod from its source.
	SyncPodUpdate
	// SyncPodCreate is the first sync of a pod.
	SyncPodCreate
	// SyncPodKill requests termination.
	SyncPodKill
)

func (t UpdateType) String() string {
	switch t {
	case SyncPodSync:
		return "sync"
	case SyncPodUpdate:
		return "update"
	case SyncPodCreate:
		return "create"
	case SyncPodKill:
		return "kill"
	}
	return "unknown"
}

// KillPodOptions tune a SyncPodKill.
type KillPodOptions struct {
	// PodTerminationGracePeriodSecondsOverride replaces the pod's grace
	// period when shorter than the one in effect.
	PodTerminationGracePeriodSecondsOverride *int64
}

// UpdatePodOptions is one update for a pod's worker.
type UpdatePodOptions struct {
	UpdateType     UpdateType
	Pod            *v1.Pod
	KillPodOptions *KillPodOptions
	// StartSpan, when set, is the root span of the pod's start, begun
	// before admission so that the admission call is in the same trace:
	// the first SyncPod continues it as its syncPod span and ends it.
	StartSpan trace.Span
}

// SyncHandler does the work of each state. Errors make the worker retry the
// same state after the back-off period. ctx of SyncTerminatingPod is
// cancelled when a shorter grace period arrives; the worker then calls it
// again with the shorter one.
type SyncHandler interface {
	SyncPod(ctx context.Context, updateType UpdateType, pod *v1.Pod) (isTerminal bool, err error)
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriod *int64) error
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error
}

// podSyncStatus is the worker state of one pod, the kubelet's podSyncStatus.
type podSyncStatus struct {
	pod           *v1.Pod
	pending       *UpdatePodOptions
	wake          chan struct{}
	retry         *time.Timer
	terminatingAt time.Time
	terminatedAt  time.Time
	finished      bool
	// gracePeriod is the termination grace period in effect; it only
	// shrinks. Nil means none was asked for: each container's own (an
	// orphan known only from the runtime).
	gracePeriod *int64
	// cancel interrupts the termination in progress.
	cancel context.CancelFunc
}

// PodWorkers is safe for concurrent use.
type PodWorkers struct {
	handler SyncHandler
	resync  time.Duration
	backoff time.Duration
	// observe, when set, is told how long each sync took, by update type.
	observe func(updateType UpdateType, d time.Duration)

	mu       sync.Mutex
	statuses map[types.UID]*podSyncStatus
	wg       sync.WaitGroup
	ctx      context.Context
}

// New returns pod workers calling handler. Each pod is re-synced resync
// after its last successful sync and backoff after a failed one (the
// kubelet's resyncInterval and backOffPeriod). Workers stop when ctx ends.
func New(ctx context.Context, handler SyncHandler, resync, backoff time.Duration, observe func(UpdateType, time.Duration)) *PodWorkers {
	if observe == nil {
		observe = func(UpdateType, time.Duration) {}
	}
	return &PodWorkers{handler: handler, resync: resync, backoff: backoff, observe: observe,
		statuses: map[types.UID]*podSyncStatus{}, ctx: ctx}
}

// Wait blocks until every worker goroutine has returned (after ctx ended).
func (p *PodWorkers) Wait() { p.wg.Wait() }

// requestedGrace is the grace period an update asks for: the override, else
// the deletion grace period, else the pod's termination grace period, as the
// kubelet's calculateEffectiveGracePeriod; nil when none is set.
func requestedGrace(opts UpdatePodOptions) *int64 {
	var grace *int64
	if opts.Pod != nil {
		if opts.Pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = opts.Pod.Spec.TerminationGracePeriodSeconds
		}
		if opts.Pod.DeletionGracePeriodSeconds != nil {
			grace = opts.Pod.DeletionGracePeriodSeconds
		}
	}
	if opts.KillPodOptions != nil && opts.KillPodOptions.PodTerminationGracePeriodSecondsOverride != nil {
		grace = opts.KillPodOptions.PodTerminationGracePeriodSecondsOverride
	}
	if grace == nil {
		return nil
	}
	g := max(*grace, 0)
	return &g
}

// shorter reports whether grace a is shorter than b (nil is longest).
func shorter(a, b *int64) bool {
	return a != nil && (b == nil || *a < *b)
}

// UpdatePod hands an update to the pod's worker, starting the worker for a
// new pod. A pod being deleted (deletion timestamp) or a SyncPodKill moves the
// pod to terminating. Updates to a finished pod are ignored. Matches the
// kubelet's podWorkers.UpdatePod.
func (p *PodWorkers) UpdatePod(opts UpdatePodOptions) {
	p.mu.Lock()
	defer p.mu.Unlock()
	uid := opts.Pod.UID
	s, ok := p.statuses[uid]
	if !ok {
		s = &podSyncStatus{pod: opts.Pod, wake: make(chan struct{}, 1)}
		p.statuses[uid] = s
		p.wg.Add(1)
		go p.podWorkerLoop(uid, s)
	}
	if s.finished {
		if opts.StartSpan != nil {
			opts.StartSpan.End()
		}
		return
	}
	if opts.UpdateType == SyncPodKill || opts.Pod.DeletionTimestamp != nil {
		grace := requestedGrace(opts)
		if s.terminatingAt.IsZero() {
			s.terminatingAt = time.Now()
			s.gracePeriod = grace
		} else if shorter(grace, s.gracePeriod) {
			s.gracePeriod = grace
			if s.cancel != nil {
				// Restart the termination with the shorter deadline.
				s.cancel()
			}
		}
	}
	s.pod = opts.Pod
	if s.pending != nil && s.pending.UpdateType == SyncPodCreate && opts.UpdateType != SyncPodKill {
		// The first sync is still a create.
		opts.UpdateType = SyncPodCreate
	}
	if s.pending != nil && s.pending.StartSpan != nil {
		// The pod's start trace goes on with the newest update.
		if opts.StartSpan == nil {
			opts.StartSpan = s.pending.StartSpan
		} else {
			s.pending.StartSpan.End()
		}
	}
	s.pending = &opts
	p.wakeLocked(s)
}

func (p *PodWorkers) wakeLocked(s *podSyncStatus) {
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is pending already; it will see the newest update
	}
}

// Wake asks a pod's worker to sync again with the pod it has (a runtime
// event for the pod).
func (p *PodWorkers) Wake(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.statuses[uid]; ok && !s.finished {
		p.wakeLocked(s)
	}
}

// IsPodTerminationRequested reports whether the pod is terminating or done.
func (p *PodWorkers) IsPodTerminationRequested(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.statuses[uid]
	return ok && !s.terminatingAt.IsZero()
}

// IsPodKnownTerminated reports whether the pod's containers are stopped for
// good.
func (p *PodWorkers) IsPodKnownTerminated(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.statuses[uid]
	return ok && !s.terminatedAt.IsZero()
}

// Lifecycle is what the workers know of one pod: IsKnown,
// IsPodTerminationRequested and IsPodKnownTerminated at one moment.
type Lifecycle struct {
	Known, TerminationRequested, KnownTerminated bool
}

// Lifecycles returns each pod's Lifecycle, under one lock: a filter over
// every pod of the node (the active pods each admission asks for) would
// otherwise take the lock three times per pod.
func (p *PodWorkers) Lifecycles(pods []*v1.Pod) []Lifecycle {
	out := make([]Lifecycle, len(pods))
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, pod := range pods {
		if s, ok := p.statuses[pod.UID]; ok {
			out[i] = Lifecycle{Known: true, TerminationRequested: !s.terminatingAt.IsZero(), KnownTerminated: !s.terminatedAt.IsZero()}
		}
	}
	return out
}

// IsKnown reports whether the pod has a worker (running or finished).
func (p *PodWorkers) IsKnown(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.statuses[uid]
	return ok
}

// Forget drops a finished worker's state, once its pod left every source.
// It returns false while the worker is not finished. Matches the removal
// part of the kubelet's SyncKnownPods.
func (p *PodWorkers) Forget(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.statuses[uid]
	if !ok {
		return true
	}
	if !s.finished {
		return false
	}
	delete(p.statuses, uid)
	return true
}

// Known returns the UIDs of every worker, finished ones included.
func (p *PodWorkers) Known() []types.UID {
	p.mu.Lock()
	defer p.mu.Unlock()
	uids := make([]types.UID, 0, len(p.statuses))
	for uid := range p.statuses {
		uids = append(uids, uid)
	}
	return uids
}

// podWorkerLoop is the goroutine of one pod: it waits for a wake-up, takes
// the newest pending update and runs the step of the pod's state.
func (p *PodWorkers) podWorkerLoop(uid types.UID, s *podSyncStatus) {
	defer p.wg.Done()
	log := logctx.From(p.ctx).WithLazy(zap.String("podUID", string(uid)))
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-s.wake:
		}
		if p.ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		update := s.pending
		s.pending = nil
		pod := s.pod
		terminating := !s.terminatingAt.IsZero()
		terminated := !s.terminatedAt.IsZero()
		grace := s.gracePeriod
		var stepCtx context.Context
		var cancel context.CancelFunc = func() {}
		stepCtx = p.ctx
		if terminating && !terminated {
			stepCtx, cancel = context.WithCancel(p.ctx)
			s.cancel = cancel
		}
		p.mu.Unlock()

		updateType := SyncPodSync
		if update != nil {
			updateType = update.UpdateType
		}
		ctx := logctx.With(stepCtx, log.WithLazy(zap.String("pod", pod.Namespace+"/"+pod.Name)))
		var startSpan trace.Span
		if update != nil {
			startSpan = update.StartSpan
		}
		start := time.Now()
		var err error
		var isTerminal bool
		var span trace.Span
		switch {
		case terminated:
			ctx, span = stepSpan(ctx, "syncTerminatedPod", pod, startSpan)
			err = p.handler.SyncTerminatedPod(ctx, pod)
		case terminating:
			ctx, span = stepSpan(ctx, "syncTerminatingPod", pod, startSpan)
			err = p.handler.SyncTerminatingPod(ctx, pod, grace)
		default:
			ctx, span = stepSpan(ctx, "syncPod", pod, startSpan)
			isTerminal, err = p.handler.SyncPod(ctx, updateType, pod)
		}
		p.observe(updateType, time.Since(start))
		endSpan(span, err)
		// Read before our own cancel below, which cancels stepCtx on
		// every path: only UpdatePod's cancel (a shorter grace period)
		// means the step was interrupted.
		interrupted := stepCtx.Err() != nil && p.ctx.Err() == nil
		cancel()

		p.mu.Lock()
		s.cancel = nil
		next := p.resync
		switch {
		case err != nil && interrupted:
			// A shorter grace period interrupted the termination: go
			// again at once. Any other failure backs off, as the
			// kubelet's completeWork requeues a failed sync after
			// backOffPeriod (a runtime that is away must not be called
			// in a busy loop).
			log.Info("termination restarted with a shorter grace period", zap.Int64p("gracePeriod", s.gracePeriod))
			next = 0
		case err != nil:
			log.Warn("pod sync failed, will retry", zap.Error(err), zap.Duration("after", p.backoff))
			next = p.backoff
		case terminated:
			s.finished = true
			p.mu.Unlock()
			log.Debug("pod worker finished")
			return
		case terminating:
			s.terminatedAt = time.Now()
			next = 0
		case isTerminal:
			// The pod is done: stop what is left of it (its sandbox)
			// without waiting, its containers have all exited.
			if s.terminatingAt.IsZero() {
				s.terminatingAt = time.Now()
				s.gracePeriod = requestedGrace(UpdatePodOptions{Pod: pod})
			}
			next = 0
		}
		p.scheduleLocked(s, next)
		p.mu.Unlock()
	}
}

// tracer starts the root span of each worker step: one trace per pod
// start, per resync and per termination (a no-op without tracing).
var tracer = tracing.Tracer("github.com/splitlet/splitlet/services/sync/worker")

// stepSpan starts the root span of one step of pod's worker, named after
// the kubelet's function. A pod's first sync continues startSpan, begun
// before admission; a termination that comes before it ends startSpan and
// starts its own trace.
func stepSpan(ctx context.Context, name string, pod *v1.Pod, startSpan trace.Span) (context.Context, trace.Span) {
	if startSpan != nil {
		if name == "syncPod" {
			return trace.ContextWithSpan(ctx, startSpan), startSpan
		}
		startSpan.SetStatus(codes.Error, "terminated before its first sync")
		startSpan.End()
	}
	return tracer.Start(ctx, name, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal),
		tracing.PodAttributes(pod.Namespace, pod.Name, string(pod.UID)))
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// scheduleLocked wakes the worker after d (at once when d is zero). A later
// schedule replaces an earlier one, as the kubelet's work queue keeps one
// entry per pod.
func (p *PodWorkers) scheduleLocked(s *podSyncStatus, d time.Duration) {
	if s.retry != nil {
		s.retry.Stop()
	}
	if d <= 0 {
		p.wakeLocked(s)
		return
	}
	s.retry = time.AfterFunc(d, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if !s.finished {
			p.wakeLocked(s)
		}
	})
}
