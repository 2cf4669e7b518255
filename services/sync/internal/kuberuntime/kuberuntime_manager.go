package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/backoff"
	"github.com/splitlet/splitlet/services/sync/internal/cm"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/lifecycle"
	"github.com/splitlet/splitlet/services/sync/internal/prober/probe"
	"github.com/splitlet/splitlet/services/sync/internal/pullcreds"
)

// minimumGracePeriodInSeconds is the shortest stop timeout sent to the
// runtime, as the kubelet's killContainer enforces (2 s); only a grace period
// override (a deletion's) goes below it.
const minimumGracePeriodInSeconds = 2

// ManagedByAnnotation marks the sandboxes sync creates. The kubelet labels
// its pods with the same io.kubernetes.pod.* keys, so on a node where a
// kubelet also runs, the label alone cannot tell whose a pod is; housekeeping
// only ever removes pods whose sandbox carries this mark (RunningPod.Managed).
const (
	ManagedByAnnotation = "splitlet.dev/managed-by"
	ManagedByValue      = "splitlet-sync"
)

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	// Sandbox is what generatePodSandboxConfig needs about the node.
	Sandbox SandboxOptions
	// Container is what generateContainerConfig needs about the node; the
	// image user fields are filled per container by SyncPod.
	Container ContainerOptions
	// CrashLoop is the restart back-off table (CrashLoopBackOff); nil makes
	// one with the kubelet's curve.
	CrashLoop *backoff.Backoff
	// ImagePull is the image pull back-off table; nil makes one.
	ImagePull *backoff.Backoff
	// PullRecords remember which credentials pulled each image (see
	// ensureImageExists); nil keeps them in memory only.
	PullRecords *pullcreds.Records
	// Recorder records the kubelet's pod events (Pulling, Created, Started,
	// Killing, BackOff, ...); nil records nothing.
	Recorder events.EventRecorder
	// Actuated records what in-place resizes set on container instances
	// (*allocation.Manager, which forgets removed pods); nil keeps the
	// records in memory and never forgets them, which suits tests only.
	Actuated ActuatedStore
	// RuntimeClasses resolves a pod's runtimeClassName to the runtime
	// handler its sandbox runs with (apiserver.Objects); nil when sync runs
	// without an API server: then every sandbox gets the runtime's default
	// handler, as a standalone kubelet's do (it has no runtimeClassManager).
	RuntimeClasses RuntimeClasses
	// PodCgroups, when set, makes each pod's cgroup with its resources
	// before its sandbox (cm.PodContainerManager, the kubelet's
	// cgroupsPerQOS) and changes it in in-place resizes; nil leaves the
	// pod cgroup to the runtime, without limits of its own.
	PodCgroups PodCgroups
}

// PodCgroups keeps pod cgroups: the kubelet's PodContainerManager, with
// ResourceConfigForPod. *cm.PodContainerManager is one.
type PodCgroups interface {
	// EnsureExists creates the pod's cgroup with its resources unless it
	// exists.
	EnsureExists(pod *v1.Pod) error
	// ResourceConfig is what the pod's cgroup should have.
	ResourceConfig(pod *v1.Pod) cm.ResourceConfig
	// Current is what the pod's cgroup has: CPU quota and shares, memory
	// limit.
	Current(pod *v1.Pod) (cm.ResourceConfig, error)
	// Set writes the set fields of cfg to the pod's cgroup.
	Set(pod *v1.Pod, cfg cm.ResourceConfig) error
}

var _ PodCgroups = (*cm.PodContainerManager)(nil)

// RuntimeClasses reads the node.k8s.io RuntimeClasses pods name: the
// kubelet's runtimeclass.Manager.
type RuntimeClasses interface {
	// LookupRuntimeHandler returns the CRI runtime handler of the
	// RuntimeClass name; "" (the runtime's default) when name is nil or
	// empty. A RuntimeClass that does not exist yields the API server's
	// NotFound error (`runtimeclass.node.k8s.io "x" not found`), matching
	// errdefs.ErrNotFound; any other error means it could not be read now.
	LookupRuntimeHandler(ctx context.Context, name *string) (string, error)
}

// ActuatedStore keeps, per container instance, the resources the last
// successful UpdateContainerResources set on it: the kubelet's actuated
// state. An instance without a record runs with what it was created with.
// Implementations must be safe for concurrent use.
type ActuatedStore interface {
	ActuatedResources(uid types.UID, containerID string) (v1.ResourceRequirements, bool)
	// SetActuatedResources fails only when the record could not be made
	// durable; it is kept in memory all the same.
	SetActuatedResources(uid types.UID, containerID string, r v1.ResourceRequirements) error
}

// memoryActuated is the ActuatedStore of a Manager given none.
type memoryActuated struct {
	mu sync.Mutex
	by map[types.UID]map[string]v1.ResourceRequirements
}

var _ ActuatedStore = (*memoryActuated)(nil)

func (a *memoryActuated) ActuatedResources(uid types.UID, id string) (v1.ResourceRequirements, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.by[uid][id]
	return r, ok
}

func (a *memoryActuated) SetActuatedResources(uid types.UID, id string, r v1.ResourceRequirements) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.by == nil {
		a.by = map[types.UID]map[string]v1.ResourceRequirements{}
	}
	if a.by[uid] == nil {
		a.by[uid] = map[string]v1.ResourceRequirements{}
	}
	a.by[uid][id] = r
	return nil
}

// noRecorder drops every event.
type noRecorder struct{}

var _ events.EventRecorder = noRecorder{}

func (noRecorder) Event(*v1.Pod, string, string, string)                           {}
func (noRecorder) Eventf(*v1.Pod, string, string, string, ...any)                  {}
func (noRecorder) EventfContainer(*v1.Pod, string, string, string, string, ...any) {}

// Manager carries out pod lifecycle decisions over a CRI runtime: the
// kubelet's kubeGenericRuntimeManager. It is safe for concurrent use; pod
// workers call it in parallel, one goroutine per pod.
type Manager struct {
	runtime runtimeapi.RuntimeServiceClient
	images  runtimeapi.ImageServiceClient
	opts    ManagerOptions

	hooks *lifecycle.HandlerRunner
	pulls *pullcreds.Records

	mu sync.Mutex
	// runtimeName is the runtime's name once a Version call told it.
	runtimeName string
	// handlers are the runtime handlers of the latest CRI Status, read at
	// handlersAt (runtimeHandlers).
	handlers   []*runtimeapi.RuntimeHandler
	handlersAt time.Time
	// waiting holds why a container of a pod is not running although it
	// should (CrashLoopBackOff, ErrImagePull, CreateContainerError...), for
	// the status; keyed by pod UID then container name.
	waiting map[types.UID]map[string]WaitingReason
}

// WaitingReason is why a container waits, as the pod status shows it in
// state.waiting.
type WaitingReason struct {
	Reason  string
	Message string
}

// NewManager returns a Manager talking to the runtime's RuntimeService and
// ImageService.
func NewManager(rt runtimeapi.RuntimeServiceClient, img runtimeapi.ImageServiceClient, opts ManagerOptions) *Manager {
	if opts.CrashLoop == nil {
		opts.CrashLoop = backoff.New(backoff.Config{}, nil)
	}
	if opts.ImagePull == nil {
		opts.ImagePull = backoff.New(backoff.Config{}, nil)
	}
	if opts.Recorder == nil {
		opts.Recorder = noRecorder{}
	}
	if opts.Actuated == nil {
		opts.Actuated = &memoryActuated{}
	}
	if opts.PullRecords == nil {
		opts.PullRecords, _ = pullcreds.OpenRecords("")
	}
	if opts.Sandbox.resolv == nil {
		opts.Sandbox.resolv = &resolvConfCache{}
	}
	m := &Manager{runtime: rt, images: img, opts: opts, pulls: opts.PullRecords, waiting: map[types.UID]map[string]WaitingReason{}}
	m.hooks = lifecycle.NewHandlerRunner(lifecycle.Options{Execer: m, PodStatus: m, Recorder: opts.Recorder})
	return m
}

// RuntimeName is the runtime's name from Version (e.g. "containerd"), the
// type part of container IDs in pod statuses. The kubelet reads it once, at
// start (NewKubeGenericRuntimeManager's getTypedVersion), and does not start
// without it; here it is read on first use and kept once a call succeeds.
// Until then it returns the error: a made-up name would put container IDs
// in statuses that match nothing in the runtime.
func (m *Manager) RuntimeName(ctx context.Context) (string, error) {
	m.mu.Lock()
	name := m.runtimeName
	m.mu.Unlock()
	if name != "" {
		return name, nil
	}
	resp, err := m.runtime.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return "", fmt.Errorf("runtime version: %w", err)
	}
	if resp.GetRuntimeName() == "" {
		return "", errors.New("runtime version: the runtime reports no name")
	}
	m.mu.Lock()
	m.runtimeName = resp.GetRuntimeName()
	m.mu.Unlock()
	return resp.GetRuntimeName(), nil
}

// ContainerWaiting returns why the named container of the pod waits, if
// SyncPod recorded a reason on its last pass.
func (m *Manager) ContainerWaiting(uid types.UID, name string) (WaitingReason, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.waiting[uid][name]
	return r, ok
}

// waitingOf returns a copy of the pod's waiting reasons, so SyncPod can tell
// whether they changed.
func (m *Manager) waitingOf(uid types.UID) map[string]WaitingReason {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.waiting[uid])
}

func (m *Manager) setWaiting(uid types.UID, name string, r *WaitingReason) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r == nil {
		delete(m.waiting[uid], name)
		return
	}
	if m.waiting[uid] == nil {
		m.waiting[uid] = map[string]WaitingReason{}
	}
	m.waiting[uid][name] = *r
}

// ForgetPod drops what the manager remembers about a pod (waiting reasons);
// call it once the pod is gone for good.
func (m *Manager) ForgetPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.waiting, uid)
}

// GC drops stale back-off entries; housekeeping calls it.
func (m *Manager) GC() {
	m.opts.CrashLoop.GC()
	m.opts.ImagePull.GC()
}

// GetPodStatus reads the runtime's view of one pod: every sandbox and every
// container instance labelled with the pod's UID, newest first. Matches the
// kubelet's kubeGenericRuntimeManager.GetPodStatus; name and namespace are
// used only when the runtime has nothing for the pod.
func (m *Manager) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	sandboxes, err := m.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{KubernetesPodUIDLabel: string(uid)}},
	})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of pod %s: %w", uid, err)
	}
	sandboxIDs := make([]string, 0, len(sandboxes.GetItems()))
	for _, sb := range sandboxes.GetItems() {
		sandboxIDs = append(sandboxIDs, sb.GetId())
	}
	containers, err := m.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{KubernetesPodUIDLabel: string(uid)}},
	})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	containerIDs := make([]string, 0, len(containers.GetContainers()))
	for _, c := range containers.GetContainers() {
		containerIDs = append(containerIDs, c.GetId())
	}
	return m.GetPodStatusOf(ctx, uid, name, namespace, PodObjects{SandboxIDs: sandboxIDs, ContainerIDs: containerIDs})
}

// PodObjects are sandboxes and containers of one pod, for GetPodStatusOf:
// sandboxes whose status was just read, and the IDs of sandboxes and
// containers whose status is to be read.
type PodObjects struct {
	Sandboxes []*runtimeapi.PodSandboxStatus
	// SandboxesReadAt is when the reading of Sandboxes began: a status
	// built from them is only as new as that.
	SandboxesReadAt time.Time
	SandboxIDs      []string
	ContainerIDs    []string
}

// HasSandbox reports whether o holds a sandbox.
func (o PodObjects) HasSandbox() bool { return len(o.Sandboxes)+len(o.SandboxIDs) > 0 }

// GetPodStatusOf builds the pod's status from the given sandboxes and
// containers, without listing: the same PodStatus GetPodStatus builds when
// these are all the pod has. SyncPod's caller uses it after creating a
// new pod's sandbox and containers (SyncResult.Created), when nothing else
// of the pod can exist. An ID the runtime no longer knows is skipped, as
// it would be had it been removed between GetPodStatus's list and status
// calls.
func (m *Manager) GetPodStatusOf(ctx context.Context, uid types.UID, name, namespace string, objs PodObjects) (*container.PodStatus, error) {
	ps := &container.PodStatus{ID: uid, Name: name, Namespace: namespace}
	ps.SandboxStatuses = append(ps.SandboxStatuses, objs.Sandboxes...)
	for _, id := range objs.SandboxIDs {
		resp, err := m.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
		if isNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("status of sandbox %s: %w", id, err)
		}
		ps.SandboxStatuses = append(ps.SandboxStatuses, resp.GetStatus())
	}
	runtimeName, err := m.RuntimeName(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range objs.ContainerIDs {
		resp, err := m.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("status of container %s: %w", id, err)
		}
		ps.ContainerStatuses = append(ps.ContainerStatuses, m.withActuated(uid, convertToKubeContainerStatus(ctx, runtimeName, resp.GetStatus())))
	}
	ps.SortNewestFirst()
	if len(ps.SandboxStatuses) > 0 {
		ps.IPs = sandboxIPs(ps.SandboxStatuses[0])
		if name == "" {
			ps.Name = ps.SandboxStatuses[0].GetMetadata().GetName()
			ps.Namespace = ps.SandboxStatuses[0].GetMetadata().GetNamespace()
		}
	}
	return ps, nil
}

// toContainerStatus maps a CRI container status to container.Status, reading
// the hash and restart count from the annotations SyncPod wrote. Matches the
// kubelet's toKubeContainerStatus.
func toContainerStatus(ctx context.Context, runtimeName string, s *runtimeapi.ContainerStatus) *container.Status {
	info := getContainerInfoFromAnnotations(ctx, s.GetAnnotations())
	name := s.GetMetadata().GetName()
	if l := getContainerInfoFromLabels(s.GetLabels()); l != nil && l.ContainerName != "" {
		name = l.ContainerName
	}
	st := &container.Status{
		ID:        container.BuildContainerID(runtimeName, s.GetId()),
		Name:      name,
		State:     container.StateFromCRI(s.GetState()),
		CreatedAt: time.Unix(0, s.GetCreatedAt()),
		Image:     s.GetImage().GetImage(),
		ImageRef:  s.GetImageRef(),
		Reason:    s.GetReason(),
		Message:   s.GetMessage(),
	}
	if u := s.GetUser(); u != nil {
		// The kubelet's toKubeContainerUser.
		st.User = &v1.ContainerUser{}
		if l := u.GetLinux(); l != nil {
			st.User.Linux = &v1.LinuxContainerUser{UID: l.GetUid(), GID: l.GetGid(), SupplementalGroups: l.GetSupplementalGroups()}
		}
	}
	if info != nil {
		st.Hash = info.Hash
		st.RestartCount = info.RestartCount
		st.Resources = info.Resources
	}
	st.ActualResources = toKubeContainerResources(s.GetResources())
	if s.GetState() != runtimeapi.ContainerState_CONTAINER_CREATED {
		st.StartedAt = time.Unix(0, s.GetStartedAt())
	}
	if s.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED {
		st.FinishedAt = time.Unix(0, s.GetFinishedAt())
		st.ExitCode = int(s.GetExitCode())
	}
	return st
}

// withActuated sets st's actuated resources to what the last in-place
// resize set on the instance, when one did, and fills the values the
// runtime did not report (always the memory request) from them; it returns
// st. Matches the kubelet's toKubeContainerStatus.
func (m *Manager) withActuated(uid types.UID, st *container.Status) *container.Status {
	if r, ok := m.opts.Actuated.ActuatedResources(uid, st.ID.ID); ok {
		st.Resources = &r
	}
	if st.Resources == nil {
		return st
	}
	quantity := func(list v1.ResourceList, name v1.ResourceName) *resource.Quantity {
		if q, ok := list[name]; ok && !q.IsZero() {
			return &q
		}
		return nil
	}
	if st.ActualResources == nil {
		st.ActualResources = &container.ContainerResources{
			CPURequest:  quantity(st.Resources.Requests, v1.ResourceCPU),
			CPULimit:    quantity(st.Resources.Limits, v1.ResourceCPU),
			MemoryLimit: quantity(st.Resources.Limits, v1.ResourceMemory),
		}
	}
	st.ActualResources.MemoryRequest = quantity(st.Resources.Requests, v1.ResourceMemory)
	return st
}

// toKubeContainerResources converts the cgroup settings the runtime reports
// for a container back to quantities; nil when it reports none. Matches
// the kubelet's toKubeContainerResources (Linux).
func toKubeContainerResources(res *runtimeapi.ContainerResources) *container.ContainerResources {
	l := res.GetLinux()
	if l == nil {
		return nil
	}
	out := &container.ContainerResources{}
	if l.GetCpuPeriod() > 0 {
		if milli := cm.QuotaToMilliCPU(l.GetCpuQuota(), l.GetCpuPeriod()); milli > 0 {
			out.CPULimit = resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
	}
	if l.GetCpuShares() > 0 {
		if milli := cm.SharesToMilliCPU(l.GetCpuShares()); milli > 0 {
			out.CPURequest = resource.NewMilliQuantity(milli, resource.DecimalSI)
		}
	}
	if l.GetMemoryLimitInBytes() > 0 {
		out.MemoryLimit = resource.NewQuantity(l.GetMemoryLimitInBytes(), resource.BinarySI)
	}
	if out.CPULimit == nil && out.CPURequest == nil && out.MemoryLimit == nil {
		return nil
	}
	return out
}

// RunningPod is a pod as the runtime knows it from labels alone, for
// housekeeping: which sandboxes and containers belong to which pod UID.
type RunningPod struct {
	// Managed is true when a sandbox of the pod carries
	// ManagedByAnnotation: sync created it.
	Managed    bool
	UID        types.UID
	Name       string
	Namespace  string
	Sandboxes  []*runtimeapi.PodSandbox
	Containers []*runtimeapi.Container
}

// GetPods lists every pod the runtime holds that carries the kubelet's pod
// UID label, grouped by UID. Sandboxes and containers without the label
// belong to someone else and are never listed. Matches the kubelet's
// kubeGenericRuntimeManager.GetPods(all=true).
func (m *Manager) GetPods(ctx context.Context) (map[types.UID]*RunningPod, error) {
	sandboxes, err := m.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	containers, err := m.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return GroupRunningPods(sandboxes.GetItems(), containers.GetContainers()), nil
}

// GroupRunningPods groups a node-wide listing of sandboxes and containers by
// the pod UID label, as GetPods does; the PLEG's relist, which lists the
// same way, uses it to share its listing with housekeeping.
func GroupRunningPods(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container) map[types.UID]*RunningPod {
	pods := map[types.UID]*RunningPod{}
	get := func(labels map[string]string) *RunningPod {
		uid := types.UID(labels[KubernetesPodUIDLabel])
		if uid == "" {
			return nil
		}
		p := pods[uid]
		if p == nil {
			p = &RunningPod{UID: uid, Name: labels[KubernetesPodNameLabel], Namespace: labels[KubernetesPodNamespaceLabel]}
			pods[uid] = p
		}
		return p
	}
	for _, sb := range sandboxes {
		if p := get(sb.GetLabels()); p != nil {
			p.Sandboxes = append(p.Sandboxes, sb)
			if sb.GetAnnotations()[ManagedByAnnotation] == ManagedByValue {
				p.Managed = true
			}
		}
	}
	for _, c := range containers {
		if p := get(c.GetLabels()); p != nil {
			p.Containers = append(p.Containers, c)
		}
	}
	return pods
}

// KillPod stops every running container of the pod, then its sandboxes.
// gracePeriodOverride, when set, replaces the pod's grace period (it is what
// remains of a deletion's grace). pod may be nil for a pod known only from
// the runtime (housekeeping of orphans); the grace period then comes from
// the container's annotations. Matches the kubelet's KillPod /
// killPodWithSyncResult: containers in parallel, then the sandboxes.
func (m *Manager) KillPod(ctx context.Context, pod *v1.Pod, uid types.UID, gracePeriodOverride *int64) error {
	ps, err := m.GetPodStatus(ctx, uid, "", "")
	if err != nil {
		return err
	}
	return m.killPodWithStatus(ctx, pod, ps, gracePeriodOverride)
}

// killPodWithStatus is KillPod acting on a status the caller read: SyncPod
// passes the one it computed its actions from, as the kubelet's SyncPod hands
// its podStatus to killPodWithSyncResult, which saves a read.
func (m *Manager) killPodWithStatus(ctx context.Context, pod *v1.Pod, ps *container.PodStatus, gracePeriodOverride *int64) (retErr error) {
	ctx, span := startStep(ctx, "killPod")
	defer func() { endStep(span, retErr) }()
	log := loggerFrom(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, len(ps.ContainerStatuses))
	var stopping []*container.Status
	for _, cs := range ps.ContainerStatuses {
		if cs.State == container.ContainerStateRunning || cs.State == container.ContainerStateUnknown || cs.State == container.ContainerStateCreated {
			stopping = append(stopping, cs)
		}
	}
	// Sidecars stop after the main containers, as in the kubelet's
	// killContainersWithSyncResult.
	var ordering *terminationOrdering
	if pod != nil && container.HasRestartableInitContainer(pod) {
		names := make([]string, 0, len(stopping))
		for _, cs := range stopping {
			names = append(names, cs.Name)
		}
		ordering = newTerminationOrdering(pod, names)
	}
	for _, cs := range stopping {
		wg.Add(1)
		go func(cs *container.Status) {
			defer wg.Done()
			var spec *v1.Container
			if pod != nil {
				spec = findContainer(pod, cs.Name)
			}
			if err := m.killContainer(ctx, pod, cs.ID, cs.Name, spec, "Stopping container "+cs.Name, "", gracePeriodOverride, ordering); err != nil {
				errs <- err
			}
		}(cs)
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	for _, sb := range ps.SandboxStatuses {
		if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if _, err := m.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.GetId()}); err != nil && !isNotFound(err) {
			all = append(all, fmt.Errorf("stop sandbox %s: %w", sb.GetId(), err))
			continue
		}
		log.Debug("sandbox stopped", zap.String("sandbox", sb.GetId()))
	}
	return errors.Join(all...)
}

// RemovePod removes every container and sandbox of the pod from the
// runtime, then the pod's log directory and its per-pod state directories
// (emptyDir volumes, termination message files). Call it only after KillPod
// succeeded and the pod has left every source. The kubelet leaves this to
// its container garbage collector (evictPodLogsDirectories) and
// cleanupOrphanedPodDirs; sync removes a pod's leftovers as soon as it is
// forgotten, so the runtime and the disk do not fill up. The state
// directories are removed only when ManagerOptions.Container names them, so
// that a default never points sync at a kubelet's /var/lib/kubelet/pods.
func (m *Manager) RemovePod(ctx context.Context, uid types.UID) error {
	ps, err := m.GetPodStatus(ctx, uid, "", "")
	if err != nil {
		return err
	}
	var all []error
	for _, cs := range ps.ContainerStatuses {
		if _, err := m.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: cs.ID.ID}); err != nil && !isNotFound(err) {
			all = append(all, fmt.Errorf("remove container %s: %w", cs.ID.ID, err))
		}
	}
	logDirs := map[string]bool{}
	for _, sb := range ps.SandboxStatuses {
		if _, err := m.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.GetId()}); err != nil && !isNotFound(err) {
			all = append(all, fmt.Errorf("remove sandbox %s: %w", sb.GetId(), err))
		}
		if md := sb.GetMetadata(); md != nil {
			root := m.opts.Sandbox.PodLogsRoot
			if root == "" {
				root = DefaultPodLogsRoot
			}
			logDirs[BuildPodLogsDirectory(root, md.GetNamespace(), md.GetName(), md.GetUid())] = true
		}
	}
	if len(all) > 0 {
		// Keep the logs while the containers writing them may remain.
		return errors.Join(all...)
	}
	dirs := make([]string, 0, len(logDirs)+2)
	for d := range logDirs {
		dirs = append(dirs, d)
	}
	for _, root := range []string{m.opts.Container.PodVolumesRoot, m.opts.Container.PodContainersRoot} {
		if root != "" && uid != "" {
			dirs = append(dirs, filepath.Join(root, string(uid)))
		}
	}
	for _, d := range dirs {
		// A memory-backed emptyDir is a tmpfs under the pod's directory.
		if err := unmountUnder(d); err != nil {
			all = append(all, fmt.Errorf("unmount pod volumes: %w", err))
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			all = append(all, fmt.Errorf("remove pod directory: %w", err))
		}
	}
	return errors.Join(all...)
}

// killContainer stops one container. Matches the kubelet's killContainer:
// the grace period starts from lifecycle.TerminationGracePeriod (deletion
// grace, a probe's own grace for probe kills, else the pod's), or for a pod
// known only from the runtime from the container's recorded annotation; the
// override (what remains of a deletion's grace, or 0 for the kill before
// an in-place restart) replaces that start; the preStop hook runs within
// what it gives (not at all when that is 0 or less); with an ordering (a
// pod with sidecars being stopped) the container waits, within what is
// left, for its turn, and says when it has stopped; and what is left is
// floored at minimumGracePeriodInSeconds, override or not, so a container
// always gets 2 s between SIGTERM and SIGKILL.
func (m *Manager) killContainer(ctx context.Context, pod *v1.Pod, id container.ContainerID, name string, spec *v1.Container, message string, reason ContainerKillReason, gracePeriodOverride *int64, ordering *terminationOrdering) error {
	log := loggerFrom(ctx)
	grace := int64(minimumGracePeriodInSeconds)
	if pod != nil && spec != nil {
		grace = lifecycle.TerminationGracePeriod(pod, spec, string(reason))
	} else if resp, err := m.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id.ID}); err == nil {
		if v, ok := resp.GetStatus().GetAnnotations()[PodTerminationGracePeriodLabel]; ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				grace = n
			}
		}
	}
	if gracePeriodOverride != nil {
		grace = *gracePeriodOverride
	}
	if pod != nil && spec != nil && grace > 0 {
		grace = m.hooks.PreStop(ctx, id, pod, spec, grace)
	}
	if ordering != nil && grace > 0 {
		grace -= int64(ordering.waitForTurn(name, grace))
	}
	if grace < minimumGracePeriodInSeconds {
		grace = minimumGracePeriodInSeconds
	}
	log.Info("killing container", zap.String("container", name), zap.String("containerID", id.String()),
		zap.Int64("gracePeriod", grace), zap.String("message", message))
	if pod != nil && pod.Spec.Containers != nil {
		m.opts.Recorder.EventfContainer(pod, name, v1.EventTypeNormal, events.KillingContainer, "%s", message)
	}
	// The RPC must outlive the grace period.
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(grace)*time.Second+30*time.Second)
	defer cancel()
	if _, err := m.runtime.StopContainer(stopCtx, &runtimeapi.StopContainerRequest{ContainerId: id.ID, Timeout: grace}); err != nil && !isNotFound(err) {
		return fmt.Errorf("stop container %s (%s): %w", name, id.ID, err)
	}
	if ordering != nil {
		ordering.containerTerminated(name)
	}
	return nil
}

func isNotFound(err error) bool {
	return err != nil && status.Code(err) == codes.NotFound
}

var _ probe.Execer = (*Manager)(nil)

// ExecSync runs cmd in a container through CRI ExecSync, for exec probes
// and hooks (probe.Execer). A command that ran returns its exit code and a
// nil error; one that outlived timeout returns an error wrapping
// context.DeadlineExceeded, as the contract asks.
func (m *Manager) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	secs := int64(0)
	if timeout > 0 {
		secs = max(int64((timeout+time.Second-1)/time.Second), 1)
		var cancel context.CancelFunc
		// The RPC gets a little longer than the command, so the runtime
		// reports the timeout rather than the transport.
		ctx, cancel = context.WithTimeout(ctx, timeout+5*time.Second)
		defer cancel()
	}
	resp, err := m.runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: containerID, Cmd: cmd, Timeout: secs})
	if err != nil {
		if status.Code(err) == codes.DeadlineExceeded || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil, 0, fmt.Errorf("command %v timed out after %s: %w", cmd, timeout, context.DeadlineExceeded)
		}
		return nil, nil, 0, fmt.Errorf("exec in container %s: %w", containerID, err)
	}
	return resp.GetStdout(), resp.GetStderr(), resp.GetExitCode(), nil
}
