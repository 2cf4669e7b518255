package status

import (
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// Clock is the time source for lastTransitionTime and startTime; tests
// inject a fixed one. k8s.io/utils/clock's clocks satisfy it.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

var _ Clock = realClock{}

// ProbeResultFunc returns the latest result of one kind of probe (readiness
// or startup) for a container instance, as the kubelet's readinessManager
// and startupManager do: ok is false when there is no result yet (the probe
// has not run, or there is none); success is the result otherwise. Whether
// the container has such a probe at all is read from the pod spec.
//
// A probe manager holding kuberuntime.ProbeResult values adapts with
//
//	func(id container.ContainerID) (bool, bool) {
//		r := pm.Startup(id)
//		return r == kuberuntime.ProbeSuccess, r != kuberuntime.ProbeUnknown
//	}
//
// Implementations must be safe for concurrent use and must not block.
type ProbeResultFunc func(id container.ContainerID) (success, ok bool)

// Probes is the probe manager's part in status generation: the kubelet's
// prober.Manager.UpdatePodStatus. It must be safe for concurrent use and
// must not block.
type Probes interface {
	// UpdatePodStatus sets Started and Ready of s's container and init
	// container statuses (which convertStatusToAPIStatus filled from the
	// runtime) for pod.
	UpdatePodStatus(pod *v1.Pod, s *v1.PodStatus)
}

// WaitingReason is why SyncPod could not start a container on its last
// attempt: Reason is machine readable (CrashLoopBackOff, ErrImagePull,
// ImagePullBackOff, CreateContainerConfigError, ...), Message is for
// humans. It matches an entry of the kubelet's ReasonCache.
type WaitingReason struct {
	Reason  string
	Message string
}

// ReasonLookup returns the waiting reason recorded for a container of a
// pod, if any. Implementations must be safe for concurrent use.
type ReasonLookup interface {
	Get(uid types.UID, containerName string) (WaitingReason, bool)
}

// Eviction forces the pod to phase Failed with a reason and message, as a
// kubelet PodSyncHandler's ShouldEvict does (activeDeadlineSeconds:
// "DeadlineExceeded"; eviction: "Evicted").
type Eviction struct {
	Reason  string
	Message string
}

// Inputs carries what the kubelet's generateAPIPodStatus reads from the
// kubelet's other managers. The zero value is usable: no probe results, no
// recorded reasons, the pod's own status as the previous status, no host IPs,
// the wall clock.
type Inputs struct {
	// Probes sets the started and ready fields of the container statuses
	// from the probe results, as the kubelet's generateAPIPodStatus calls
	// its probe manager's UpdatePodStatus. Nil means no probe manager: a
	// running container is started unless it has a startup probe, and ready
	// once started unless it has a readiness probe.
	Probes Probes
	// Reasons gives the waiting reasons SyncPod recorded; nil means none.
	Reasons ReasonLookup
	// OldStatus is the last status generated for the pod (the status
	// manager's cache). Nil means pod.Status, the status the API server
	// (or the PodService store) holds.
	OldStatus *v1.PodStatus
	// HostIPs are the node's IPs, primary first. They become hostIP(s), and
	// the pod IPs of a host-network pod.
	HostIPs []string
	// PodIsTerminal says the pod worker has decided the pod will run no
	// more (it was deleted, evicted, or all its containers are done): its
	// phase becomes Succeeded or Failed even under restartPolicy Always.
	PodIsTerminal bool
	// Eviction, when set, forces phase Failed with its reason and message.
	Eviction *Eviction
	// PodSandboxChanged reports whether the pod needs a new sandbox (the
	// kubelet's PodSandboxChanged), for the PodReadyToStartContainers
	// condition. Nil uses a check of the newest sandbox's state and network
	// (see sandboxReady).
	PodSandboxChanged func(pod *v1.Pod, podStatus *container.PodStatus) bool
	// Clock stamps condition transitions and the start time; nil is the
	// wall clock.
	Clock Clock
	// ResizePending is the pod's PodResizePending condition while the node
	// has not granted a resize of its spec (allocation.Manager); nil when
	// none waits.
	ResizePending *v1.PodCondition
	// ResizeError is why the pod's last in-place resize failed; empty when
	// it did not.
	ResizeError string
	// SupportsRecursiveReadOnly says whether the pod's runtime handler
	// supports recursive read-only mounts
	// (kuberuntime.Manager.SupportsRecursiveReadOnlyMounts); asked only for
	// a pod with a read-only mount that asks for them. Nil says no.
	SupportsRecursiveReadOnly func(pod *v1.Pod) bool
}

// rroSupport asks Inputs.SupportsRecursiveReadOnly about a pod at most
// once per status generation, and only if a mount needs the answer.
type rroSupport struct {
	ask       func(*v1.Pod) bool
	pod       *v1.Pod
	asked, ok bool
}

func (r *rroSupport) supported() bool {
	if r.ask == nil {
		return false
	}
	if !r.asked {
		r.ok, r.asked = r.ask(r.pod), true
	}
	return r.ok
}

func (in *Inputs) clock() Clock {
	if in.Clock == nil {
		return realClock{}
	}
	return in.Clock
}

// ReasonCache records, per pod and container, why SyncPod last failed to
// start the container, for the status to show as a waiting reason. SyncPod
// calls Update when a start fails and Remove when it succeeds; the pod
// worker calls RemovePod when it forgets the pod. It matches the kubelet's
// ReasonCache, which is an LRU; here entries live until removed, because
// each pod worker removes its own.
type ReasonCache struct {
	mu    sync.RWMutex
	cache map[types.UID]map[string]WaitingReason
}

var _ ReasonLookup = (*ReasonCache)(nil)

// NewReasonCache returns an empty cache.
func NewReasonCache() *ReasonCache {
	return &ReasonCache{cache: make(map[types.UID]map[string]WaitingReason)}
}

// Update records err and message for the container. The reason is the text
// of the innermost error err wraps, so a caller may wrap the sentinel
// (backoff.ErrCrashLoopBackOff, backoff.ErrImagePull, ...) with context and
// the reason stays "CrashLoopBackOff". A nil err removes the entry.
func (c *ReasonCache) Update(uid types.UID, containerName string, err error, message string) {
	if err == nil {
		c.Remove(uid, containerName)
		return
	}
	for inner := errors.Unwrap(err); inner != nil; inner = errors.Unwrap(err) {
		err = inner
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	pod := c.cache[uid]
	if pod == nil {
		pod = make(map[string]WaitingReason)
		c.cache[uid] = pod
	}
	pod[containerName] = WaitingReason{Reason: err.Error(), Message: message}
}

// Remove forgets the container's reason.
func (c *ReasonCache) Remove(uid types.UID, containerName string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cache[uid], containerName)
	if len(c.cache[uid]) == 0 {
		delete(c.cache, uid)
	}
}

// RemovePod forgets every reason of the pod.
func (c *ReasonCache) RemovePod(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cache, uid)
}

// Get returns the container's recorded reason.
func (c *ReasonCache) Get(uid types.UID, containerName string) (WaitingReason, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.cache[uid][containerName]
	return r, ok
}
