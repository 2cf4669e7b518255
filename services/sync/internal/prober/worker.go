package prober

import (
	"math/rand/v2"
	"strings"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// worker probes one container with one probe type, periodically, until it
// is stopped or the container will not run again. It matches the
// kubelet's prober worker.
type worker struct {
	m *Manager
	// stopCh and manualTriggerCh are buffered so stop and a trigger never
	// block the caller.
	stopCh          chan struct{}
	manualTriggerCh chan struct{}

	pod       *v1.Pod
	container v1.Container // with the probe defaulted (see defaultProbe)
	spec      *v1.Probe
	probeType probeType
	results   *ResultsManager

	// State owned by the worker goroutine.
	containerID container.ContainerID
	lastResult  kuberuntime.ProbeResult
	resultRun   int
	onHold      bool
}

func newWorker(m *Manager, pt probeType, pod *v1.Pod, c v1.Container) *worker {
	spec := defaultProbe(pt.spec(&c))
	switch pt {
	case liveness:
		c.LivenessProbe = spec
	case readiness:
		c.ReadinessProbe = spec
	case startup:
		c.StartupProbe = spec
	}
	w := &worker{
		m:               m,
		stopCh:          make(chan struct{}, 1),
		manualTriggerCh: make(chan struct{}, 1),
		pod:             pod,
		container:       c,
		spec:            spec,
		probeType:       pt,
	}
	switch pt {
	case liveness:
		w.results = m.liveness
	case readiness:
		w.results = m.readiness
	case startup:
		w.results = m.startup
	}
	return w
}

// defaultProbe returns a copy of p with the API server's defaults applied
// to unset fields (periodSeconds 10, timeoutSeconds 1, successThreshold 1,
// failureThreshold 3): pods from a manifest directory or a URL may never
// have been defaulted, and a zero period would spin.
func defaultProbe(p *v1.Probe) *v1.Probe {
	out := p.DeepCopy()
	if out.PeriodSeconds <= 0 {
		out.PeriodSeconds = 10
	}
	if out.TimeoutSeconds <= 0 {
		out.TimeoutSeconds = 1
	}
	if out.SuccessThreshold <= 0 {
		out.SuccessThreshold = 1
	}
	if out.FailureThreshold <= 0 {
		out.FailureThreshold = 3
	}
	return out
}

// run probes every period until stopped. Matches the kubelet's
// worker.run, including the random first delay when the manager started
// less than a period ago, so a restarted sync does not fire every probe of
// the node at once.
func (w *worker) run() {
	defer w.m.wg.Done()
	period := time.Duration(w.spec.PeriodSeconds) * w.m.timeUnit
	defer func() {
		if !w.containerID.IsEmpty() {
			w.results.Remove(w.containerID)
		}
		w.m.metrics.forget(w)
		w.m.removeWorker(w)
	}()

	if period > time.Since(w.m.start) {
		jitter := time.NewTimer(time.Duration(rand.Float64() * float64(period)))
		select {
		case <-jitter.C:
		case <-w.stopCh:
			jitter.Stop()
			return
		case <-w.m.ctx.Done():
			jitter.Stop()
			return
		}
	}

	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for w.doProbe() {
		select {
		case <-w.stopCh:
			return
		case <-w.m.ctx.Done():
			return
		case <-ticker.C:
		case <-w.manualTriggerCh:
			// As the kubelet's worker.run: the next periodic probe is a
			// full period after this one.
			ticker.Reset(period)
		}
	}
}

// stop asks the worker to exit; it is safe to call more than once.
func (w *worker) stop() {
	select {
	case w.stopCh <- struct{}{}:
	default:
	}
}

// doProbe probes once and records the result; it reports whether the
// worker should keep going. It follows the kubelet's worker.doProbe step
// by step.
//
// It is longer than 120 lines on purpose: it stays one function in the
// order of the kubelet's worker.doProbe, so that the two read side by side and a
// change upstream maps to one place here.
func (w *worker) doProbe() (keepGoing bool) {
	start := time.Now()
	log := logctx.From(w.m.ctx).With(zap.String("probeType", w.probeType.String()),
		zap.String("pod", w.pod.Namespace+"/"+w.pod.Name), zap.String("container", w.container.Name))
	defer func() {
		// A panicking probe must not take sync down; try again next period.
		if r := recover(); r != nil {
			log.Error("probe panicked", zap.Any("panic", r))
			keepGoing = true
		}
	}()

	status, ok := w.m.status.GetPodStatus(w.pod.UID)
	if !ok {
		// The pod has no status yet, or was already deleted.
		return true
	}
	if status.Phase == v1.PodFailed || status.Phase == v1.PodSucceeded {
		return false
	}
	c, ok := findStatus(status.ContainerStatuses, w.container.Name)
	if !ok || c.ContainerID == "" {
		c, ok = findStatus(status.InitContainerStatuses, w.container.Name)
		if !ok || c.ContainerID == "" {
			// The container has not been created yet, or was removed.
			return true
		}
	}

	if w.containerID.String() != c.ContainerID {
		// A new container instance: results start over.
		if !w.containerID.IsEmpty() {
			w.results.Remove(w.containerID)
		}
		w.containerID = parseContainerID(c.ContainerID)
		// A container that was running before sync restarted gets no
		// initial value: a ready container would otherwise flap to not
		// ready until its probe passes again (the kubelet's
		// ChangeContainerStatusOnKubeletRestart-off behaviour).
		if !w.m.startedBeforeRestart(&c) {
			w.results.set(w.m.ctx, w.containerID, w.probeType.initialValue(), w.pod.UID)
		}
		w.onHold = false
		// Unlike the kubelet, the threshold run starts over too: a new
		// instance should earn successThreshold successes of its own.
		w.lastResult = kuberuntime.ProbeUnknown
		w.resultRun = 0
	}
	if w.onHold {
		// Waiting for the container the failure will bring.
		return true
	}

	if c.State.Running == nil {
		if !w.containerID.IsEmpty() {
			w.results.set(w.m.ctx, w.containerID, kuberuntime.ProbeFailure, w.pod.UID)
		}
		// Keep going only if the container will run again: it has not
		// terminated, its effective policy and rules restart it (a
		// sidecar's Always included), or the pod is restarting in place.
		// The kubelet's doProbe with ContainerRestartRules and
		// RestartAllContainersOnContainerExits on.
		if c.State.Terminated == nil {
			return true
		}
		return container.ContainerShouldRestart(&w.container, &w.pod.Spec, c.State.Terminated.ExitCode) ||
			container.ShouldAllContainersRestart(w.pod, nil, &status)
	}

	if w.pod.DeletionTimestamp != nil && (w.probeType == liveness || w.probeType == startup) {
		// The pod is being deleted: a liveness or startup failure now
		// would only restart a container about to be stopped.
		w.results.set(w.m.ctx, w.containerID, kuberuntime.ProbeSuccess, w.pod.UID)
		return false
	}

	if int32(time.Since(c.State.Running.StartedAt.Time)/w.m.timeUnit) < w.spec.InitialDelaySeconds {
		return true
	}

	if w.isStarted(&c) {
		// A started container needs no startup probe; the worker stays
		// for the next instance.
		if w.probeType == startup {
			return true
		}
	} else if w.probeType != startup {
		// Liveness and readiness wait for the startup probe.
		return true
	}

	result, err := w.m.prober.probe(w.m.ctx, w.probeType, w.pod, status, &w.container, w.containerID)
	if err != nil {
		// The probe could not run; its outcome says nothing.
		return true
	}
	w.m.metrics.observe(w, result, start)

	if w.lastResult == result {
		w.resultRun++
	} else {
		w.lastResult = result
		w.resultRun = 1
	}
	if (result == kuberuntime.ProbeFailure && w.resultRun < int(w.spec.FailureThreshold)) ||
		(result == kuberuntime.ProbeSuccess && w.resultRun < int(w.spec.SuccessThreshold)) {
		return true
	}

	w.results.set(w.m.ctx, w.containerID, result, w.pod.UID)

	if (w.probeType == liveness && result == kuberuntime.ProbeFailure) || w.probeType == startup {
		// A liveness failure restarts the container, and a startup probe
		// has said all it will about this instance: hold until a new
		// container ID, so nothing execs into a container being stopped.
		w.onHold = true
		w.resultRun = 0
	}
	if w.probeType == startup && result == kuberuntime.ProbeSuccess {
		// The container has started: its readiness probe runs now, not
		// up to a period later. In the kubelet, the sync that follows a
		// startup result (syncLoopIteration: SetContainerStartup, then
		// handleProbeSync) regenerates the status, and UpdatePodStatus
		// triggers the readiness worker of a started container that is
		// not ready yet.
		w.m.triggerReadiness(w.pod.UID, w.container.Name)
	}
	return true
}

// isStarted reports whether the container counts as started: its status
// says so, or this instance's startup probe has succeeded and the status
// saying so is not published yet (the kubelet's SetContainerStartup marks
// the status started before the sync that triggers readiness; here the
// status comes with that sync).
func (w *worker) isStarted(c *v1.ContainerStatus) bool {
	if c.Started != nil && *c.Started {
		return true
	}
	r, ok := w.m.startup.Get(w.containerID)
	return ok && r == kuberuntime.ProbeSuccess
}

func findStatus(statuses []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	for _, s := range statuses {
		if s.Name == name {
			return s, true
		}
	}
	return v1.ContainerStatus{}, false
}

// parseContainerID splits "<type>://<id>"; anything else is the empty ID.
// Matches the kubelet's kubecontainer.ParseContainerID.
func parseContainerID(s string) container.ContainerID {
	typ, id, ok := strings.Cut(s, "://")
	if !ok {
		return container.ContainerID{}
	}
	return container.BuildContainerID(typ, id)
}
