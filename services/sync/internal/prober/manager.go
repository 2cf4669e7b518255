package prober

import (
	"context"
	"net/http"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/prober/probe"
)

// StatusProvider gives the latest status sync generated for a pod (with
// container IDs, states and the pod IP), as the kubelet's status manager
// does for its probe workers. sync's podmanager.Manager satisfies it.
// Implementations must be safe for concurrent use and must not block.
type StatusProvider interface {
	GetPodStatus(uid types.UID) (v1.PodStatus, bool)
}

// Options configure a Manager. Status is required; the rest may be zero.
type Options struct {
	// Execer runs exec probes; nil makes every exec probe error.
	Execer probe.Execer
	// Status supplies the pod statuses probe workers read.
	Status StatusProvider
	// Recorder receives Unhealthy / ProbeWarning events; nil records none.
	Recorder Recorder
	// TimeUnit is the length of one "second" of the probe spec
	// (initialDelaySeconds, periodSeconds, timeoutSeconds). Zero means
	// time.Second; tests shorten it.
	TimeUnit time.Duration
	// HTTPTransport carries httpGet probes; nil is the kubelet's probe
	// transport (no keep-alives, no proxy, TLS unverified).
	HTTPTransport http.RoundTripper
	// Metrics counts the probes (the node API's /metrics/probes); nil
	// counts nothing.
	Metrics *Metrics
}

// Manager runs the probes of the pods it is given and holds their results.
// It matches the kubelet's prober.manager (one worker goroutine per
// container and probe type, started by AddPod and stopped by RemovePod or
// CleanupPods) and implements kuberuntime.ProbeResults.
type Manager struct {
	ctx       context.Context
	start     time.Time
	status    StatusProvider
	prober    *prober
	timeUnit  time.Duration
	metrics   *Metrics
	liveness  *ResultsManager
	readiness *ResultsManager
	startup   *ResultsManager

	mu      sync.RWMutex
	workers map[probeKey]*worker
	// wg counts running workers, so tests can wait for them to exit.
	wg sync.WaitGroup
}

var _ kuberuntime.ProbeResults = (*Manager)(nil)

// NewManager returns a Manager. ctx carries the logger and bounds every
// worker: when it is done all workers stop.
func NewManager(ctx context.Context, opts Options) *Manager {
	unit := opts.TimeUnit
	if unit <= 0 {
		unit = time.Second
	}
	transport := opts.HTTPTransport
	if transport == nil {
		transport = probe.NewTransport()
	}
	return &Manager{
		ctx:       ctx,
		start:     time.Now(),
		status:    opts.Status,
		prober:    &prober{execer: opts.Execer, recorder: opts.Recorder, transport: transport, timeUnit: unit},
		timeUnit:  unit,
		metrics:   opts.Metrics,
		liveness:  NewResultsManager(),
		readiness: NewResultsManager(),
		startup:   NewResultsManager(),
		workers:   make(map[probeKey]*worker),
	}
}

// LivenessResults, ReadinessResults and StartupResults are the results
// managers; their Updates channels must be drained (see ResultsManager).
func (m *Manager) LivenessResults() *ResultsManager  { return m.liveness }
func (m *Manager) ReadinessResults() *ResultsManager { return m.readiness }
func (m *Manager) StartupResults() *ResultsManager   { return m.startup }

// Liveness returns the latest liveness result of a container instance
// (kuberuntime.ProbeResults).
func (m *Manager) Liveness(id container.ContainerID) kuberuntime.ProbeResult {
	r, _ := m.liveness.Get(id)
	return r
}

// Startup returns the latest startup result of a container instance
// (kuberuntime.ProbeResults).
func (m *Manager) Startup(id container.ContainerID) kuberuntime.ProbeResult {
	r, _ := m.startup.Get(id)
	return r
}

// probedContainers returns the containers whose probes run: the regular
// containers and the restartable init containers (sidecars), as the
// kubelet's AddPod and RemovePod. Ordinary init containers and ephemeral
// containers are never probed.
func probedContainers(pod *v1.Pod) []v1.Container {
	cs := append([]v1.Container{}, pod.Spec.Containers...)
	for i := range pod.Spec.InitContainers {
		if container.IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			cs = append(cs, pod.Spec.InitContainers[i])
		}
	}
	return cs
}

// AddPod starts a worker for every probe of the pod's containers that has
// none yet. Matches the kubelet's manager.AddPod; calling it again for the
// same pod is harmless.
func (m *Manager) AddPod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range probedContainers(pod) {
		for _, pt := range []probeType{startup, readiness, liveness} {
			if pt.spec(&c) == nil {
				continue
			}
			key := probeKey{podUID: pod.UID, containerName: c.Name, probeType: pt}
			if _, ok := m.workers[key]; ok {
				continue
			}
			w := newWorker(m, pt, pod, c)
			m.workers[key] = w
			m.wg.Add(1)
			go w.run()
		}
	}
}

// RemovePod stops the workers of the pod's containers. Matches the
// kubelet's manager.RemovePod: each worker removes its results and itself
// when it exits.
func (m *Manager) RemovePod(pod *v1.Pod) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, c := range probedContainers(pod) {
		for _, pt := range []probeType{readiness, liveness, startup} {
			if w, ok := m.workers[probeKey{podUID: pod.UID, containerName: c.Name, probeType: pt}]; ok {
				w.stop()
			}
		}
	}
}

// CleanupPods stops the workers of every pod not in desired. Matches the
// kubelet's manager.CleanupPods, called from housekeeping.
func (m *Manager) CleanupPods(desired map[types.UID]struct{}) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for key, w := range m.workers {
		if _, ok := desired[key.podUID]; !ok {
			w.stop()
		}
	}
}

func (m *Manager) getWorker(uid types.UID, name string, pt probeType) (*worker, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	w, ok := m.workers[probeKey{podUID: uid, containerName: name, probeType: pt}]
	return w, ok
}

// triggerReadiness asks the container's readiness worker, if it has one,
// to probe now; it reports whether there is one. It never blocks: a
// trigger already pending is enough.
func (m *Manager) triggerReadiness(uid types.UID, name string) bool {
	w, ok := m.getWorker(uid, name, readiness)
	if ok {
		select {
		case w.manualTriggerCh <- struct{}{}:
		default:
		}
	}
	return ok
}

// removeWorker forgets w when it exits, unless a newer worker already
// took its key.
func (m *Manager) removeWorker(w *worker) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := probeKey{podUID: w.pod.UID, containerName: w.container.Name, probeType: w.probeType}
	if m.workers[key] == w {
		delete(m.workers, key)
	}
}

// workerCount is the number of workers, for tests.
func (m *Manager) workerCount() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.workers)
}

// UpdatePodStatus sets the started and ready fields of the container
// statuses in podStatus from the probe results. Matches the kubelet's
// manager.UpdatePodStatus:
//   - started: running, and the startup probe succeeded, or the container
//     has no startup probe (a probe that has not run yet means not started);
//   - ready (regular containers and sidecars, once started): running, and
//     the readiness probe succeeded, or there is no readiness probe; a
//     readiness probe without a result is triggered to run now;
//   - a container already running when sync (re)started keeps its started
//     and ready state until its probes report again (see
//     readyStateOnRestart);
//   - ordinary init containers are ready once they exited 0.
func (m *Manager) UpdatePodStatus(pod *v1.Pod, podStatus *v1.PodStatus) {
	for i := range podStatus.ContainerStatuses {
		cs := &podStatus.ContainerStatuses[i]
		started := m.isContainerStarted(pod, cs)
		cs.Started = &started
		if !started {
			continue
		}
		cs.Ready = m.isContainerReady(pod, cs, findContainer(pod.Spec.Containers, cs.Name))
	}
	for i := range podStatus.InitContainerStatuses {
		cs := &podStatus.InitContainerStatuses[i]
		started := m.isContainerStarted(pod, cs)
		cs.Started = &started
		spec := findContainer(pod.Spec.InitContainers, cs.Name)
		if spec == nil {
			continue
		}
		if !container.IsRestartableInitContainer(spec) {
			if cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
				cs.Ready = true
			}
			continue
		}
		if !started {
			continue
		}
		cs.Ready = m.isContainerReady(pod, cs, spec)
	}
}

func (m *Manager) isContainerStarted(pod *v1.Pod, cs *v1.ContainerStatus) bool {
	if cs.State.Running == nil {
		return false
	}
	if r, ok := m.startup.Get(parseContainerID(cs.ContainerID)); ok {
		return r == kuberuntime.ProbeSuccess
	}
	if cs.Started != nil && *cs.Started {
		// Started before, and no startup verdict since (sync restarted):
		// keep it started, as the kubelet does.
		return true
	}
	_, hasStartupProbe := m.getWorker(pod.UID, cs.Name, startup)
	return !hasStartupProbe
}

func (m *Manager) isContainerReady(pod *v1.Pod, cs *v1.ContainerStatus, spec *v1.Container) bool {
	if cs.State.Running == nil {
		return false
	}
	if r, ok := m.readiness.Get(parseContainerID(cs.ContainerID)); ok && r == kuberuntime.ProbeSuccess {
		return true
	}
	// Probe now rather than at the next period, so a container that just
	// started becomes ready as soon as it can.
	exists := m.triggerReadiness(pod.UID, cs.Name)
	ready := !exists
	if spec != nil && m.startedBeforeRestart(cs) {
		ready = m.readyStateOnRestart(pod, cs, spec, ready)
	}
	return ready
}

// restartGrace is how long before the manager's start a container must
// have started to count as running before sync (re)started, in spec
// seconds: the kubelet's kubeletRestartGracePeriod (10 s).
const restartGrace = 10

// startedBeforeRestart reports whether the container was already running
// when this manager started, i.e. sync restarted under it.
func (m *Manager) startedBeforeRestart(cs *v1.ContainerStatus) bool {
	if cs.State.Running == nil || cs.State.Running.StartedAt.IsZero() {
		return false
	}
	return cs.State.Running.StartedAt.Time.Before(m.start.Add(-restartGrace * m.timeUnit))
}

// readyStateOnRestart keeps a container that was running before sync
// restarted from flapping to not ready while its readiness probe has not
// run again: with no result yet it stays ready if the pod was Ready (per
// the pod's last status), and not ready otherwise. Matches the kubelet's
// setReadyStateOnKubeletRestart (ChangeContainerStatusOnKubeletRestart
// off, the default).
func (m *Manager) readyStateOnRestart(pod *v1.Pod, cs *v1.ContainerStatus, spec *v1.Container, ready bool) bool {
	if !ready {
		if _, ok := m.readiness.Get(parseContainerID(cs.ContainerID)); !ok {
			ready = true
		}
	}
	if spec.ReadinessProbe != nil {
		podReady := false
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
				podReady = true
				break
			}
		}
		if !podReady {
			ready = false
		}
	}
	return ready
}

func findContainer(cs []v1.Container, name string) *v1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}
