package syncloop

import (
	"context"
	"sort"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/nodefeatures"
	"github.com/splitlet/splitlet/services/sync/internal/sysctl"
	"github.com/splitlet/splitlet/services/sync/internal/worker"
)

// admitOutcome is what canAdmitPod decided.
type admitOutcome int

const (
	admitted admitOutcome = iota
	// rejected: the pod is Failed (rejectPod) and never starts.
	rejected
	// pendingAdmission: admission could not be asked; the pod waits and is
	// retried (fail-closed policy).
	pendingAdmission
)

// maxPreemptionRounds bounds how often one admission may preempt: the
// admission service plans victims so that the second answer admits, but
// pods may come and go in between.
const maxPreemptionRounds = 3

// canAdmitPod asks the admitter whether pod may run beside the active pods,
// as the kubelet's canAdmitPod does with its admit handlers, and acts on
// the answer (admitWith).
//
// It runs on the sync loop goroutine, so admission decisions are serial as
// in the kubelet, and a preemption holds up the loop until the victims have
// stopped, as the kubelet's does.
func (k *Kubelet) canAdmitPod(ctx context.Context, pod *v1.Pod) admitOutcome {
	ctx, span := tracer.Start(k.startContext(ctx, pod), "canAdmitPod")
	defer span.End()
	res, err := k.opts.Admitter.Admit(ctx, pod, k.activePods(pod, nil))
	return k.admitWith(ctx, pod, res, err)
}

// admitWith acts on the admitter's first answer for pod, res, or on err
// when there was none. When the answer names victims (critical-pod
// preemption) they are killed with the kubelet's preemption status, waited
// for (bounded, as the kubelet's killPodNow) and the question is asked
// again without them. A rejection fails the pod (rejectPod). When the
// admitter failed, the failure policy decides: Fail keeps the pod pending
// and retries, Ignore admits; a pod the runtime already runs (sync
// restarted) is admitted either way.
func (k *Kubelet) admitWith(ctx context.Context, pod *v1.Pod, res AdmitResult, err error) admitOutcome {
	log := logctx.From(ctx).WithLazy(zap.String("pod", pod.Namespace+"/"+pod.Name), zap.String("podUID", string(pod.UID)))
	gone := map[types.UID]bool{}
	for round := 0; ; round++ {
		if err != nil {
			if k.opts.AdmissionFailurePolicy == FailurePolicyIgnore {
				log.Warn("admission unavailable, admitting the pod (failure policy Ignore)", zap.Error(err))
				k.clearPendingAdmission(pod)
				return admitted
			}
			if k.runsAlready(ctx, pod) {
				// Admitted by an earlier sync (this is a restart): keeping
				// a running pod in limbo would help nobody.
				log.Warn("admission unavailable; the pod already runs, so it stays admitted", zap.Error(err))
				k.clearPendingAdmission(pod)
				return admitted
			}
			k.waitForAdmission(ctx, pod, err)
			return pendingAdmission
		}
		if len(res.Victims) > 0 && round < maxPreemptionRounds {
			for _, uid := range k.preempt(ctx, pod, res) {
				gone[uid] = true
			}
			res, err = k.opts.Admitter.Admit(ctx, pod, k.activePods(pod, gone))
			continue
		}
		if !res.Admit || len(res.Victims) > 0 {
			k.rejectPod(ctx, pod, res.Reason, res.Message)
			return rejected
		}
		k.clearPendingAdmission(pod)
		return admitted
	}
}

// admitPods admits new pods in the order given and starts each admitted
// one (startPod) before any later pod is judged, so every pod is judged
// against the pods admitted before it, as HandlePodAdditions' one
// canAdmitPod per pod does. With a BatchAdmitter, one AdmitPods call
// decides a run of pods: the admission service does for the run what
// consecutive Admit calls would, for one round trip and one copy of the
// active set. An answer naming victims is acted on like canAdmitPod's
// (preempt, then ask Admit again for that pod), and the pods after it go in
// the next call, judged once the victims are gone. When a batch call fails,
// every pod of the run gets what a failed Admit gives it (the failure
// policy) rather than one more call each to a service that is not there.
func (k *Kubelet) admitPods(ctx context.Context, pods []*v1.Pod) {
	pods = k.rejectLocally(ctx, pods)
	batch, canBatch := k.opts.Admitter.(BatchAdmitter)
	for len(pods) > 0 {
		if !canBatch || len(pods) == 1 {
			if k.canAdmitPod(ctx, pods[0]) == admitted {
				k.startPod(ctx, pods[0])
			}
			pods = pods[1:]
			continue
		}
		bctx, span := k.admitPodsSpan(ctx, pods)
		results, err := batch.AdmitPods(bctx, pods, k.activePods(nil, nil))
		span.End()
		if err != nil {
			for _, pod := range pods {
				if k.admitWith(k.startContext(ctx, pod), pod, AdmitResult{}, err) == admitted {
					k.startPod(ctx, pod)
				}
			}
			return
		}
		if len(results) == 0 {
			// Not the contract; one Admit per pod still decides.
			logctx.From(ctx).Warn("batch admission answered no pod; admitting one at a time", zap.Int("pods", len(pods)))
			canBatch = false
			continue
		}
		decided := 0
		for _, res := range results[:min(len(results), len(pods))] {
			pod := pods[decided]
			decided++
			if k.admitWith(k.startContext(ctx, pod), pod, res, nil) == admitted {
				k.startPod(ctx, pod)
			}
			if len(res.Victims) > 0 {
				// Later answers, if any, did not know the victims were
				// going; ask again.
				break
			}
		}
		pods = pods[decided:]
	}
}

// rejectLocally fails the pods sync itself refuses, and returns the others
// in order:
//   - with the kubelet's SysctlForbidden rejection, the pods setting a
//     sysctl Options.Sysctls does not allow (the kubelet's sysctl admit
//     handler, patternAllowlist.Admit);
//   - with PodFeatureUnsupported, the pods needing a node-declared feature
//     the node does not declare (declaredFeaturesAdmitHandler).
//
// Sync applies these rather than the Admitter: they guard what sync hands
// the runtime, so they hold whichever admitter runs, AlwaysAdmit included,
// and when admission is down under policy Ignore. Every new pod passes here
// before canAdmitPod; a pod admission retries has passed already, and
// neither its sysctls nor its spec's feature needs can change. The kubelet
// runs the eviction handler before the sysctl one and the predicate handler
// before the declared-features one, so a pod refused for both is Evicted,
// or OutOf<resource>, there and refused here.
func (k *Kubelet) rejectLocally(ctx context.Context, pods []*v1.Pod) []*v1.Pod {
	allowed := make([]*v1.Pod, 0, len(pods))
	for _, pod := range pods {
		if err := k.opts.Sysctls.Validate(pod); err != nil {
			k.rejectPod(ctx, pod, sysctl.ForbiddenReason, err.Error())
			continue
		}
		if ok, message := nodefeatures.Admit(pod); !ok {
			k.rejectPod(ctx, pod, nodefeatures.UnsupportedReason, message)
			continue
		}
		allowed = append(allowed, pod)
	}
	return allowed
}

// activePods are the pods the new pod must fit beside, as the kubelet's
// filterOutInactivePods: the pods isPodInactive keeps, each with its
// allocated resources (the kubelet's getAllocatedPods), not those of a
// resize not granted. except (when not nil) and the pods in gone (victims
// just preempted) are left out.
//
// It asks the pod manager, the workers, the admission records and the
// allocations once each for all pods, under one lock each, rather than
// taking six locks per pod: every batch of a burst asks this of every pod
// of the node. That halves BenchmarkActivePods; in a 5000-pod burst the
// walk costs about as much as before, since reaching each pod's records
// is the cost there (BENCHMARKS.md, nineteenth session).
func (k *Kubelet) activePods(except *v1.Pod, gone map[types.UID]bool) []*v1.Pod {
	pods, phases := k.podManager.GetPodsAndPhases()
	lifecycles := k.workers.Lifecycles(pods)
	active := pods[:0]
	k.mu.Lock()
	for i, p := range pods {
		if (except != nil && p.UID == except.UID) || gone[p.UID] ||
			inactive(lifecycles[i], phases[i], k.rejected[p.UID] || k.pendingAdmission[p.UID]) {
			continue
		}
		active = append(active, p)
	}
	k.mu.Unlock()
	k.alloc.UpdatePodsFromAllocation(active)
	if len(active) == 0 {
		return nil
	}
	return active
}

// isPodInactive is the kubelet's: a pod is active when it is admitted (it
// has a worker), not known to have stopped, and not in a terminal phase
// unless still terminating (a terminating pod holds its resources until
// its containers stop).
func (k *Kubelet) isPodInactive(p *v1.Pod) bool {
	k.mu.Lock()
	notAdmitted := k.rejected[p.UID] || k.pendingAdmission[p.UID]
	k.mu.Unlock()
	phase, _ := k.podManager.GetPodPhase(p.UID)
	return inactive(k.workers.Lifecycles([]*v1.Pod{p})[0], phase, notAdmitted)
}

// inactive is isPodInactive's rule over what it looked up: the pod's
// workers' lifecycle, its recorded phase ("" before its first status) and
// whether admission refused it or has not decided.
func inactive(lc worker.Lifecycle, phase v1.PodPhase, notAdmitted bool) bool {
	return !lc.Known || lc.KnownTerminated || notAdmitted ||
		(isTerminalPhase(phase) && !lc.TerminationRequested)
}

// GetActivePods returns the pods admission counts and the pod-resources
// API lists, ordered by namespace/name: the kubelet's GetActivePods.
func (k *Kubelet) GetActivePods() []*v1.Pod {
	return k.activePods(nil, nil)
}

// GetActivePodByName returns the pod named namespace/name when it is
// active (isPodInactive), as the kubelet's kubeletPodsProvider.GetPodByName
// for the pod-resources API's Get; false when it is unknown or inactive.
func (k *Kubelet) GetActivePodByName(namespace, name string) (*v1.Pod, bool) {
	p := k.podManager.GetPodByFullName(namespace, name)
	if p == nil || k.isPodInactive(p) {
		return nil, false
	}
	return p, true
}

func isTerminalPhase(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// preempt kills the victims res names with its victim reason and message
// and waits until they have stopped or the kubelet's killPodNow timeout
// passed; it returns the UIDs of the victims it asked to stop. Victims
// sync does not run are skipped: they hold nothing.
func (k *Kubelet) preempt(ctx context.Context, pod *v1.Pod, res AdmitResult) []types.UID {
	log := logctx.From(ctx)
	var uids []types.UID
	var timeout time.Duration
	for _, ref := range res.Victims {
		victim := k.findPod(ref)
		if victim == nil || !k.workers.IsKnown(victim.UID) {
			log.Warn("preemption victim is not running here", zap.String("victim", ref.Namespace+"/"+ref.Name))
			continue
		}
		log.Info("preempting pod to admit a critical pod", zap.String("victim", victim.Namespace+"/"+victim.Name),
			zap.String("pod", pod.Namespace+"/"+pod.Name))
		// The kubelet's CriticalPodAdmissionHandler.evictPodsToFreeRequests:
		// a Warning event, then the kill with the victim's own grace period.
		k.opts.Recorder.Eventf(victim, v1.EventTypeWarning, res.VictimReason, "%s", res.VictimMessage)
		k.killPodWithStatus(victim, terminalStatus{
			reason: res.VictimReason, message: res.VictimMessage, conditionMessage: messagePreemptedCondition,
		}, nil)
		uids = append(uids, victim.UID)
		timeout = max(timeout, killPodNowTimeout(victim, nil))
	}
	k.waitTerminated(ctx, uids, timeout)
	return uids
}

// killPodNowTimeout is how long the kubelet's killPodNow waits for a pod to
// stop: one and a half grace periods, at least 10 s.
func killPodNowTimeout(pod *v1.Pod, override *int64) time.Duration {
	grace := int64(v1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if override != nil {
		grace = *override
	}
	return time.Duration(max(grace+grace/2, 10)) * time.Second
}

// waitTerminated waits until every pod in uids has stopped (its worker
// reports it terminated), timeout has passed or ctx ended.
func (k *Kubelet) waitTerminated(ctx context.Context, uids []types.UID, timeout time.Duration) {
	if len(uids) == 0 {
		return
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		done := true
		for _, uid := range uids {
			if !k.workers.IsPodKnownTerminated(uid) {
				done = false
				break
			}
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			logctx.From(ctx).Warn("preemption victims did not stop in time; admitting anyway, as the kubelet", zap.Duration("timeout", timeout))
			return
		case <-tick.C:
		}
	}
}

// runsAlready reports whether the runtime has a sandbox or container of
// pod, i.e. a previous sync admitted it.
func (k *Kubelet) runsAlready(ctx context.Context, pod *v1.Pod) bool {
	running, err := k.runtime.GetPods(ctx)
	if err != nil {
		return false
	}
	_, ok := running[pod.UID]
	return ok
}

// findPod finds a pod by UID, or by namespace and name when the UID is
// empty.
func (k *Kubelet) findPod(ref PodRef) *v1.Pod {
	if ref.UID != "" {
		return k.podManager.GetPodByUID(ref.UID)
	}
	return k.podManager.GetPodByFullName(ref.Namespace, ref.Name)
}

// waitForAdmission parks a pod admission could not decide on (failure
// policy Fail): it stays Pending with status reason AdmissionUnavailable,
// the admitter's error in the message and a PodScheduled=False condition of
// the same reason, which is how `kubectl get`/`describe` show a pod that
// has not been placed; it starts only once admission admits it. A retry
// is scheduled with back-off.
func (k *Kubelet) waitForAdmission(ctx context.Context, pod *v1.Pod, err error) {
	k.mu.Lock()
	first := !k.pendingAdmission[pod.UID]
	k.pendingAdmission[pod.UID] = true
	k.mu.Unlock()
	message := messageAdmissionUnavailable + err.Error()
	if first {
		logctx.From(ctx).Warn("admission unavailable, the pod waits (failure policy Fail)",
			zap.String("pod", pod.Namespace+"/"+pod.Name), zap.Error(err))
		k.opts.Recorder.Eventf(pod, v1.EventTypeWarning, ReasonAdmissionUnavailable, "%s", message)
	}
	s := k.currentStatus(pod)
	s.Phase = v1.PodPending
	s.Reason = ReasonAdmissionUnavailable
	s.Message = message
	setCondition(&s, v1.PodCondition{
		Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: ReasonAdmissionUnavailable, Message: message,
	})
	k.podManager.SetPodStatus(pod.UID, s)
	k.scheduleAdmitRetry()
}

// clearPendingAdmission forgets that pod waited for admission and drops the
// waiting status, so the status generated once it runs does not carry the
// stale reason.
func (k *Kubelet) clearPendingAdmission(pod *v1.Pod) {
	k.mu.Lock()
	was := k.pendingAdmission[pod.UID]
	delete(k.pendingAdmission, pod.UID)
	k.mu.Unlock()
	if !was {
		return
	}
	s := k.currentStatus(pod)
	if s.Reason == ReasonAdmissionUnavailable {
		s.Reason, s.Message = "", ""
	}
	conds := s.Conditions[:0]
	for _, c := range s.Conditions {
		if c.Type != v1.PodScheduled {
			conds = append(conds, c)
		}
	}
	s.Conditions = conds
	k.podManager.SetPodStatus(pod.UID, s)
}

// scheduleAdmitRetry arms the retry of pending admissions unless armed; the
// delay doubles up to AdmitRetryMax and resets once nothing is pending.
func (k *Kubelet) scheduleAdmitRetry() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.admitRetryArmed {
		return
	}
	k.admitRetryArmed = true
	d := k.admitRetryDelay
	k.admitRetryDelay = min(2*d, k.opts.AdmitRetryMax)
	time.AfterFunc(d, func() {
		select {
		case k.admitRetry <- struct{}{}:
		default:
		}
	})
}

// retryPendingAdmissions asks admission again for the pods waiting for it,
// oldest first; it stops at the first that still cannot be decided (the
// admitter is still unavailable and a new retry is armed).
func (k *Kubelet) retryPendingAdmissions(ctx context.Context) {
	k.mu.Lock()
	k.admitRetryArmed = false
	var pods []*v1.Pod
	for uid := range k.pendingAdmission {
		if p := k.podManager.GetPodByUID(uid); p != nil {
			pods = append(pods, p)
		} else {
			delete(k.pendingAdmission, uid)
			k.endStartSpanLocked(uid, "removed before admission")
		}
	}
	k.mu.Unlock()
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
	})
	for _, pod := range pods {
		if k.canAdmitPod(ctx, pod) != admitted {
			if k.isPendingAdmission(pod.UID) {
				return
			}
			continue
		}
		k.startPod(ctx, pod)
	}
	k.mu.Lock()
	if len(k.pendingAdmission) == 0 {
		k.admitRetryDelay = k.opts.AdmitRetryInitial
	}
	k.mu.Unlock()
}

func (k *Kubelet) isPendingAdmission(uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.pendingAdmission[uid]
}

// currentStatus is the status sync last published for pod, else the pod's
// own.
func (k *Kubelet) currentStatus(pod *v1.Pod) v1.PodStatus {
	if s, ok := k.podManager.GetPodStatus(pod.UID); ok {
		return *s.DeepCopy()
	}
	return *pod.Status.DeepCopy()
}

// setCondition replaces or appends c, stamping lastTransitionTime when its
// status changes, as podutil.UpdatePodCondition.
func setCondition(s *v1.PodStatus, c v1.PodCondition) {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	for i := range s.Conditions {
		if s.Conditions[i].Type != c.Type {
			continue
		}
		c.LastTransitionTime = s.Conditions[i].LastTransitionTime
		if s.Conditions[i].Status != c.Status || c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
		s.Conditions[i] = c
		return
	}
	c.LastTransitionTime = now
	s.Conditions = append(s.Conditions, c)
}
