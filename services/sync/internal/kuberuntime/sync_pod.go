package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/tracing"
	"github.com/splitlet/splitlet/services/sync/internal/backoff"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/lifecycle"
	"github.com/splitlet/splitlet/services/sync/internal/pullcreds"
)

// Waiting reasons SyncPod records when a container cannot be started, as the
// kubelet's pod status shows them.
const (
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonCreateContainerError       = "CreateContainerError"
	ReasonRunContainerError          = "RunContainerError"
	ReasonErrImageNeverPull          = "ErrImageNeverPull"
	ReasonImageInspectError          = "ImageInspectError"
)

// SyncResult says what SyncPod did, so that the caller knows
// whether the runtime's view of the pod may have changed.
type SyncResult struct {
	// Acted is true when SyncPod made, or tried, a call that changes the
	// pod's sandboxes or containers (RunPodSandbox, CreateContainer,
	// StartContainer, StopContainer, StopPodSandbox, RemoveContainer). A
	// status read before such a sync no longer shows the pod; after a sync
	// that did not act it still does.
	Acted bool
	// WaitingChanged is true when a waiting reason of one of the pod's
	// containers (ContainerWaiting) was set, changed or cleared: the pod's
	// API status shows it although the runtime did not change.
	WaitingChanged bool
	// Created are the sandbox this sync created, if any (its status when
	// the sync read it for the pod's IPs, else its ID), and the
	// containers it created (started or not), in order. With a nil error
	// they are everything the sync made (GetPodStatusOf).
	Created PodObjects
	// Reset is true when this sync removed the pod's containers for an
	// in-place restart (RestartAllContainers): the caller should sync the
	// pod again at once to start them afresh.
	Reset bool
	// ResizeErr is why an in-place resize failed (also joined into the
	// error); the status shows it in PodResizeInProgress (reason Error).
	ResizeErr error
}

// SyncPod makes the runtime match the pod, in the kubelet's
// kubeGenericRuntimeManager.SyncPod order:
//  1. compute what to do (computePodActions);
//  2. kill the pod if its sandbox must go, else kill unwanted containers,
//     and, when the pod restarts in place (restartAllContainers, from its
//     API status's AllContainersRestarting condition), kill and remove every
//     instance of its init and regular containers (ContainersToReset),
//     then resize running containers in place (doPodResizeAction; the
//     kubelet's step 8, moved up: see below);
//  3. purge init containers when a new sandbox starts the pod over;
//  4. create the sandbox if needed;
//  5. start ephemeral, then init, then regular containers (startContainer),
//     each subject to crash-loop and image-pull back-off; the first start
//     past its crash-loop back-off first pulls the images of the pod's
//     image volumes (getImageVolumes), and a container that mounts one
//     whose pull failed waits with that failure.
//
// A container that cannot start records a waiting reason (ContainerWaiting)
// and does not stop the others, as in the kubelet; the returned error joins
// every failure. podStatus must be newest first and read after the pod's
// previous sync acted (GetPodStatus, or a cached status at least that new):
// decisions on an older status could repeat or undo what that sync did. For
// a host-network pod, podStatus.IPs must be the pod IPs of its API status
// (the node's): its containers' status.podIP(s) env comes from them. The
// result says whether this sync acted, also when it returns an error.
//
// It is longer than 120 lines on purpose: it stays one function in the
// order of the kubelet's SyncPod, so that the two read side by side and a
// change upstream maps to one place here.
func (m *Manager) SyncPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, probes ProbeResults, restartAllContainers bool) (res SyncResult, retErr error) {
	log := loggerFrom(ctx)
	var resizeErr error
	defer func() {
		if resizeErr != nil {
			res.ResizeErr = resizeErr
			retErr = errors.Join(retErr, resizeErr)
		}
	}()
	waitingBefore := m.waitingOf(pod.UID)
	defer func() { res.WaitingChanged = !maps.Equal(waitingBefore, m.waitingOf(pod.UID)) }()
	_, span := startStep(ctx, "computePodActions")
	actions := computePodActions(ctx, pod, podStatus, probes, restartAllContainers)
	span.End()
	log.Debug("computed pod actions", zap.Stringer("actions", actions))

	if actions.KillPod {
		if actions.CreateSandbox && len(podStatus.SandboxStatuses) > 0 {
			log.Info("pod sandbox changed, it will be killed and re-created")
			m.opts.Recorder.Event(pod, v1.EventTypeNormal, events.SandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
		}
		if hasRunning(podStatus) {
			res.Acted = true
			if err := m.killPodWithStatus(ctx, pod, podStatus, nil); err != nil {
				return res, fmt.Errorf("kill pod: %w", err)
			}
		}
		if actions.CreateSandbox {
			res.Acted = res.Acted || len(podStatus.ContainerStatuses) > 0
			m.purgeInitContainers(ctx, pod, podStatus)
		}
	} else {
		for id, info := range actions.ContainersToKill {
			res.Acted = true
			if err := m.killContainer(ctx, pod, id, info.Name, info.Container, info.Message, info.Reason, nil, nil); err != nil {
				return res, fmt.Errorf("kill container %s: %w", info.Name, err)
			}
		}
		if len(actions.ContainersToReset) > 0 {
			res.Acted, res.Reset = true, true
			if err := m.resetContainers(ctx, pod, actions.ContainersToReset); err != nil {
				return res, err
			}
		}
		// In-place resizes. The kubelet does this after starting init
		// containers and before regular ones; here it comes before any
		// start, because most syncs that resize start nothing and return
		// early below. A failure is retried by the next sync and does not
		// hold up the starts.
		if len(actions.ContainersToUpdate) > 0 {
			res.Acted = true
			if err := m.doPodResizeAction(ctx, pod, actions); err != nil {
				log.Warn("in-place resize failed", zap.Error(err))
				resizeErr = err
			}
		}
	}

	sandboxID := actions.SandboxID
	toStart := len(actions.ContainersToStart) + len(actions.InitContainersToStart) + len(actions.EphemeralContainersToStart)
	// Volumes are refreshed on every sync of a pod that runs or will, as
	// the kubelet's syncPod waits for its volumes each time; nothing
	// starts while one was never set up (the containers wait in
	// ContainerCreating, as the kubelet's).
	if !actions.KillPod || actions.CreateSandbox {
		if err := m.setUpVolumes(ctx, pod); err != nil && toStart > 0 {
			return res, err
		}
	}
	if actions.CreateSandbox {
		if toStart == 0 {
			// Nothing would run in it: the pod is done.
			return res, nil
		}
		res.Acted = true
		// The pod's cgroup, with its limits, before the runtime puts the
		// sandbox in it (the kubelet's syncPod, pcm.EnsureExists).
		if pcg := m.opts.PodCgroups; pcg != nil {
			if err := pcg.EnsureExists(pod); err != nil {
				m.opts.Recorder.Eventf(pod, v1.EventTypeWarning, events.FailedToCreatePodContainer, "unable to ensure pod container exists: %v", err)
				return res, fmt.Errorf("failed to ensure that the pod: %v cgroups exist and are correctly applied: %w", pod.UID, err)
			}
		}
		id, err := m.createPodSandbox(ctx, pod, actions.Attempt)
		if err != nil {
			m.opts.Recorder.Eventf(pod, v1.EventTypeWarning, events.FailedCreatePodSandBox, "Failed to create pod sandbox: %v", err)
			return res, fmt.Errorf("create sandbox: %w", err)
		}
		sandboxID = id
		res.Created.SandboxIDs = []string{id}
		log.Info("created pod sandbox", zap.String("sandbox", id), zap.Uint32("attempt", actions.Attempt))
	}
	if sandboxID == "" || toStart == 0 {
		return res, nil
	}
	sbConfig, err := generatePodSandboxConfig(ctx, pod, actions.Attempt, m.opts.Sandbox)
	if err != nil {
		return res, fmt.Errorf("sandbox config: %w", err)
	}
	// A host-network sandbox has no IPs of its own: its containers see the
	// node's, which the caller put in podStatus.IPs from the pod's API
	// status, as the kubelet's SyncPod does before calling the runtime's
	// (the kubelet's kubeGenericRuntimeManager.SyncPod then leaves them
	// alone for a host-network pod).
	podIPs := podStatus.IPs
	if !container.IsHostNetworkPod(pod) {
		sbReadAt := time.Now()
		sbStatus, err := m.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID})
		if err != nil {
			return res, fmt.Errorf("status of sandbox %s: %w", sandboxID, err)
		}
		podIPs = sandboxIPs(sbStatus.GetStatus())
		if len(res.Created.SandboxIDs) == 1 {
			// Created by this sync: the status just read stays true
			// while containers are created in it, so the read after the
			// sync need not repeat it.
			res.Created = PodObjects{Sandboxes: []*runtimeapi.PodSandboxStatus{sbStatus.GetStatus()}, SandboxesReadAt: sbReadAt}
		}
	}
	// Pulled once, by the first start that gets past its crash-loop
	// back-off (see getImageVolumes).
	var imageVolumes imageVolumePulls
	imageVolumesPulled := false

	var errs []error
	start := func(spec *v1.Container, typ string) error {
		if in, msg, err := m.opts.CrashLoop.DoBackOff(pod, spec, podStatus); in {
			m.setWaiting(pod.UID, spec.Name, &WaitingReason{Reason: err.Error(), Message: msg})
			log.Info("back-off restarting failed container", zap.String("container", spec.Name), zap.String("message", msg))
			m.opts.Recorder.EventfContainer(pod, spec.Name, v1.EventTypeWarning, events.BackOffStartContainer, "Back-off restarting failed container %s in pod %s", spec.Name, backoff.FormatPod(pod))
			return err
		}
		if !imageVolumesPulled {
			imageVolumes, imageVolumesPulled = m.getImageVolumes(ctx, pod, sbConfig), true
		}
		// Failed late, on each container that mounts a missing image
		// volume, so that it shows ErrImagePull or ImagePullBackOff.
		vols, err := m.toContainerImageVolumes(pod, spec, imageVolumes)
		if err != nil {
			log.Warn("container start failed", zap.String("container", spec.Name), zap.String("type", typ), zap.Error(err))
			return err
		}
		id, created, err := m.startContainer(ctx, pod, podStatus, sandboxID, sbConfig, spec, podIPs, vols)
		res.Acted = res.Acted || created
		if id != "" {
			res.Created.ContainerIDs = append(res.Created.ContainerIDs, id)
		}
		if err != nil {
			log.Warn("container start failed", zap.String("container", spec.Name), zap.String("type", typ), zap.Error(err))
			return err
		}
		m.setWaiting(pod.UID, spec.Name, nil)
		return nil
	}
	for _, idx := range actions.EphemeralContainersToStart {
		ec := &pod.Spec.EphemeralContainers[idx]
		spec := v1.Container(ec.EphemeralContainerCommon)
		if err := start(&spec, ContainerTypeEphemeral); err != nil {
			errs = append(errs, err)
		}
	}
	for _, idx := range actions.InitContainersToStart {
		spec := &pod.Spec.InitContainers[idx]
		if err := start(spec, ContainerTypeInit); err != nil {
			// Init containers run in order: a later one must not start
			// before this one did. Sidecars are the exception, but only
			// once they are up; stopping here is the safe side.
			errs = append(errs, err)
			return res, errors.Join(errs...)
		}
	}
	for _, idx := range actions.ContainersToStart {
		if err := start(&pod.Spec.Containers[idx], ContainerTypeRegular); err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}

// resetContainers kills (without grace) and removes the given instances,
// in order, for an in-place restart of the pod. Their log files stay until
// the pod is removed, so restart counts continue from them. Matches the
// ContainersToReset step of the kubelet's SyncPod.
func (m *Manager) resetContainers(ctx context.Context, pod *v1.Pod, infos []ContainerToRemoveInfo) error {
	noGrace := int64(0)
	for _, info := range infos {
		name := info.Container.Name
		if info.Kill {
			if err := m.killContainer(ctx, pod, info.ContainerID, name, info.Container, "killing", ReasonRestartAllContainers, &noGrace, nil); err != nil {
				return fmt.Errorf("kill container %s before its removal: %w", name, err)
			}
		}
		if _, err := m.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: info.ContainerID.ID}); err != nil && !isNotFound(err) {
			return fmt.Errorf("remove container %s (%s): %w", name, info.ContainerID.ID, err)
		}
	}
	return nil
}

// hasRunning reports whether killing the pod has anything to stop: a
// container that is not exited, or a ready sandbox (what killPodWithStatus
// stops).
func hasRunning(ps *container.PodStatus) bool {
	for _, cs := range ps.ContainerStatuses {
		if cs.State != container.ContainerStateExited {
			return true
		}
	}
	for _, sb := range ps.SandboxStatuses {
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			return true
		}
	}
	return false
}

// createPodSandbox creates the pod's log directory and runs its sandbox,
// marked with ManagedByAnnotation, with the runtime handler of the pod's
// RuntimeClass: one that cannot be read fails the sandbox, so no pod asking
// for a sandboxed runtime (gVisor, Kata) runs under the default one.
// Matches the kubelet's createPodSandbox.
func (m *Manager) createPodSandbox(ctx context.Context, pod *v1.Pod, attempt uint32) (_ string, retErr error) {
	ctx, span := startStep(ctx, "createPodSandbox")
	defer func() { endStep(span, retErr) }()
	cfg, err := generatePodSandboxConfig(ctx, pod, attempt, m.opts.Sandbox)
	if err != nil {
		return "", err
	}
	if cfg.Annotations == nil {
		cfg.Annotations = map[string]string{}
	}
	cfg.Annotations[ManagedByAnnotation] = ManagedByValue
	if err := mkdirAll(cfg.GetLogDirectory(), 0o755); err != nil {
		return "", fmt.Errorf("create pod log directory: %w", err)
	}
	handler := ""
	if m.opts.RuntimeClasses != nil {
		if handler, err = m.opts.RuntimeClasses.LookupRuntimeHandler(ctx, pod.Spec.RuntimeClassName); err != nil {
			return "", err
		}
		if handler != "" {
			loggerFrom(ctx).Debug("running pod with runtime handler", zap.String("runtimeHandler", handler))
		}
	}
	resp, err := m.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: handler})
	if err != nil {
		return "", err
	}
	return resp.GetPodSandboxId(), nil
}

// purgeInitContainers removes the exited init containers of the pod's old
// sandbox, so a pod starting over in a new sandbox runs its init containers
// again. Matches the kubelet's purgeInitContainers.
func (m *Manager) purgeInitContainers(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus) {
	log := loggerFrom(ctx)
	for i := range pod.Spec.InitContainers {
		name := pod.Spec.InitContainers[i].Name
		for _, cs := range podStatus.ContainerStatuses {
			if cs.Name != name {
				continue
			}
			if _, err := m.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: cs.ID.ID}); err != nil && !isNotFound(err) {
				log.Warn("failed to remove init container", zap.String("container", name), zap.Error(err))
			}
		}
	}
}

// startContainer pulls the image as the pull policy says, creates and starts
// one container, then runs its postStart hook. Matches the kubelet's
// startContainer. The restart count is one more than the
// latest instance's, read from its annotation. id is the new container's
// ID once CreateContainer returned one. created reports whether
// CreateContainer was called, successfully or not: from then on the pod's
// runtime state may have changed.
func (m *Manager) startContainer(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, sandboxID string, sbConfig *runtimeapi.PodSandboxConfig, spec *v1.Container, podIPs []string, imageVolumes map[string]*runtimeapi.ImageSpec) (id string, created bool, retErr error) {
	ctx, span := startStep(ctx, "startContainer", tracing.ContainerAttribute(spec.Name))
	defer func() { endStep(span, retErr) }()
	// Known before anything is created, so that the started container's ID
	// can be built below.
	runtimeName, err := m.RuntimeName(ctx)
	if err != nil {
		return "", false, err
	}
	imageRef, image, err := m.ensureImageExists(ctx, pod, spec, sbConfig)
	if err != nil {
		return "", false, err
	}
	restartCount := 0
	if cs := podStatus.FindContainerStatusByName(spec.Name); cs != nil {
		restartCount = cs.RestartCount + 1
	} else {
		// Garbage-collected or purged instances leave no count behind; a
		// log file left in the pod's log directory still tells how many
		// attempts there were, as the kubelet's calcRestartCountByLogDir.
		restartCount = restartCountFromLogDir(filepath.Join(sbConfig.GetLogDirectory(), spec.Name))
	}

	createCtx, createSpan := startStep(ctx, "createContainer")
	cfg, err := m.containerConfig(createCtx, pod, spec, restartCount, imageRef, image, podIPs, podStatus, imageVolumes)
	if err != nil {
		endStep(createSpan, err)
		m.setWaiting(pod.UID, spec.Name, &WaitingReason{Reason: ReasonCreateContainerConfigError, Message: err.Error()})
		m.opts.Recorder.EventfContainer(pod, spec.Name, v1.EventTypeWarning, events.FailedToCreateContainer, "Error: %v", err)
		return "", false, fmt.Errorf("%s: %w", ReasonCreateContainerConfigError, err)
	}
	resp, err := m.runtime.CreateContainer(createCtx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sandboxID, Config: cfg, SandboxConfig: sbConfig,
	})
	endStep(createSpan, err)
	if err != nil {
		m.setWaiting(pod.UID, spec.Name, &WaitingReason{Reason: ReasonCreateContainerError, Message: err.Error()})
		m.opts.Recorder.EventfContainer(pod, spec.Name, v1.EventTypeWarning, events.FailedToCreateContainer, "Error: %v", err)
		return "", true, fmt.Errorf("%s: %w", ReasonCreateContainerError, err)
	}
	m.opts.Recorder.EventfContainer(pod, spec.Name, v1.EventTypeNormal, events.CreatedContainer, "Created container: %s", spec.Name)
	if _, err := m.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.GetContainerId()}); err != nil {
		m.setWaiting(pod.UID, spec.Name, &WaitingReason{Reason: ReasonRunContainerError, Message: err.Error()})
		m.opts.Recorder.EventfContainer(pod, spec.Name, v1.EventTypeWarning, events.FailedToStartContainer, "Error: %v", err)
		return resp.GetContainerId(), true, fmt.Errorf("%s: %w", ReasonRunContainerError, err)
	}
	m.opts.Recorder.EventfContainer(pod, spec.Name, v1.EventTypeNormal, events.StartedContainer, "Started container %s", spec.Name)
	cid := container.BuildContainerID(runtimeName, resp.GetContainerId())
	if msg, err := m.postStartHook(ctx, cid, pod, spec); err != nil {
		// The kubelet kills a container whose postStart hook failed; the
		// restart policy decides what comes next.
		m.setWaiting(pod.UID, spec.Name, &WaitingReason{Reason: lifecycle.ErrPostStartHook.Error(), Message: msg})
		if kerr := m.killContainer(ctx, pod, cid, spec.Name, spec, "FailedPostStartHook", ReasonFailedPostStartHook, nil, nil); kerr != nil {
			loggerFrom(ctx).Warn("cannot kill container after its postStart hook failed", zap.String("container", spec.Name), zap.Error(kerr))
		}
		return resp.GetContainerId(), true, err
	}
	loggerFrom(ctx).Info("started container", zap.String("container", spec.Name),
		zap.String("containerID", resp.GetContainerId()), zap.Int("restartCount", restartCount))
	return resp.GetContainerId(), true, nil
}

// postStartHook runs the container's postStart hook (lifecycle.Hooks),
// in a span of its own when there is one.
func (m *Manager) postStartHook(ctx context.Context, cid container.ContainerID, pod *v1.Pod, spec *v1.Container) (string, error) {
	if spec.Lifecycle == nil || spec.Lifecycle.PostStart == nil {
		return m.hooks.PostStart(ctx, cid, pod, spec)
	}
	ctx, span := startStep(ctx, "postStartHook")
	msg, err := m.hooks.PostStart(ctx, cid, pod, spec)
	endStep(span, err)
	return msg, err
}

// ensureImageExists applies the container's pull policy and the image-pull
// back-off, returning the image reference to run and, when it was already
// present, the image as ImageStatus described it (nil after a pull). Its
// events name the container; a failure is its waiting reason.
func (m *Manager) ensureImageExists(ctx context.Context, pod *v1.Pod, spec *v1.Container, sbConfig *runtimeapi.PodSandboxConfig) (string, *runtimeapi.Image, error) {
	event := func(eventtype, reason, messageFmt string, args ...any) {
		m.opts.Recorder.EventfContainer(pod, spec.Name, eventtype, reason, messageFmt, args...)
	}
	ref, present, waiting, err := m.ensureImage(ctx, pod, spec.Image, spec.ImagePullPolicy, sbConfig, event)
	if err != nil {
		m.setWaiting(pod.UID, spec.Name, waiting)
		return "", nil, err
	}
	return ref, present, nil
}

// imageEventFunc records one of ensureImage's events: on the container
// whose image it is, or on the pod for an image volume (the kubelet's
// objRef).
type imageEventFunc func(eventtype, reason, messageFmt string, args ...any)

// ensureImage makes imageName present for pod under policy, as the kubelet's
// imageManager.EnsureImageExists: Never needs the image present,
// IfNotPresent pulls only when absent, Always pulls every time; and, as
// KubeletEnsureSecretPulledImages (on by default) has it, an image present
// because sync pulled it with a Secret's login counts as present only for
// pods that offer that login (pullcreds.Records.MustPull): others pull it
// again with their own credentials, or, under Never, see it as absent.
// Pulls use the pod's imagePullSecrets and the image-pull back-off, keyed
// by pod and image. It returns the image reference and, when the image was
// already present, the image as ImageStatus described it (nil after a
// pull); on failure, the waiting reason and message a container needing
// the image shows (ImageInspectError, ErrImageNeverPull, ImagePullBackOff,
// ErrImagePull), and the error.
func (m *Manager) ensureImage(ctx context.Context, pod *v1.Pod, imageName string, policy v1.PullPolicy, sbConfig *runtimeapi.PodSandboxConfig, event imageEventFunc) (string, *runtimeapi.Image, *WaitingReason, error) {
	image := &runtimeapi.ImageSpec{Image: imageName}
	var present *runtimeapi.Image
	if policy != v1.PullAlways {
		resp, err := m.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image})
		if err != nil {
			// The kubelet's imagePullPrecheck; its message quotes the
			// image ID it failed to get (always ""), this one the image.
			msg := fmt.Sprintf("Failed to inspect image %q: %v", imageName, err)
			event(v1.EventTypeWarning, events.FailedToInspectImage, "%s", msg)
			return "", nil, &WaitingReason{Reason: ReasonImageInspectError, Message: msg}, fmt.Errorf("inspect image %q: %w", imageName, err)
		}
		present = resp.GetImage()
	}
	credentials := sync.OnceValues(func() ([]pullcreds.Credential, error) { return m.pullCredentials(ctx, pod, imageName) })
	if present.GetId() != "" {
		mustPull, err := m.pulls.MustPull(imageName, present.GetId(), credentials)
		if err != nil {
			loggerFrom(ctx).Warn("cannot check the pod's credentials for a present image: pulling it", zap.String("image", imageName), zap.Error(err))
		}
		if !mustPull {
			event(v1.EventTypeNormal, events.PulledImage, "Container image %q already present on machine and can be accessed by the pod", imageName)
			return present.GetId(), present, nil, nil
		}
	}
	if policy == v1.PullNever {
		// Present but not the pod's to use reads as absent, so that the
		// image's presence is not revealed.
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", imageName)
		event(v1.EventTypeWarning, events.ErrImageNeverPullPolicy, "%s", msg)
		return "", nil, &WaitingReason{Reason: ReasonErrImageNeverPull, Message: msg}, errors.New(msg)
	}
	if msg, err := m.opts.ImagePull.CheckImagePull(pod.UID, imageName); err != nil {
		event(v1.EventTypeNormal, events.BackOffPullImage, "%s", msg)
		return "", nil, &WaitingReason{Reason: err.Error(), Message: msg}, err
	}
	event(v1.EventTypeNormal, events.PullingImage, "Pulling image %q", imageName)
	start := time.Now()
	ref, err := m.pullImage(ctx, image, sbConfig, credentials)
	if err != nil {
		msg, reason := m.opts.ImagePull.ImagePullFailed(pod.UID, imageName, err)
		event(v1.EventTypeWarning, events.FailedToPullImage, "Failed to pull image %q: %v", imageName, err)
		return "", nil, &WaitingReason{Reason: reason.Error(), Message: msg}, fmt.Errorf("%w: %s", backoff.ErrImagePull, msg)
	}
	event(v1.EventTypeNormal, events.PulledImage, "Successfully pulled image %q in %s", imageName, time.Since(start).Round(time.Millisecond))
	return ref, nil, nil, nil
}

// pullImage pulls image, recording the pull for later pods' access checks.
// Without credentials it pulls anonymously; otherwise it tries each in
// turn and returns at the first success, or every failure (the kubelet's
// kubeGenericRuntimeManager.PullImage).
func (m *Manager) pullImage(ctx context.Context, image *runtimeapi.ImageSpec, sbConfig *runtimeapi.PodSandboxConfig, credentials func() ([]pullcreds.Credential, error)) (_ string, retErr error) {
	ctx, span := startStep(ctx, "pullImage", attribute.String("container.image.name", image.Image))
	defer func() { endStep(span, retErr) }()
	creds, err := credentials()
	if err != nil {
		return "", err
	}
	if err := m.pulls.StartPull(image.Image); err != nil {
		return "", fmt.Errorf("record the pull of %q: %w", image.Image, err)
	}
	var ref string
	var used *pullcreds.Credential
	defer func() {
		if err := m.pulls.EndPull(image.Image, ref, used); err != nil {
			loggerFrom(ctx).Warn("cannot record an image pull", zap.String("image", image.Image), zap.Error(err))
		}
	}()
	if len(creds) == 0 {
		resp, err := m.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, SandboxConfig: sbConfig})
		if err != nil {
			return "", err
		}
		ref = resp.GetImageRef()
		return ref, nil
	}
	var errs []error
	for i := range creds {
		resp, err := m.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: creds[i].Auth, SandboxConfig: sbConfig})
		if err == nil {
			ref, used = resp.GetImageRef(), &creds[i]
			return ref, nil
		}
		errs = append(errs, err)
	}
	return "", utilerrors.NewAggregate(errs)
}

// pullCredentials returns the logins the pod's imagePullSecrets hold for
// image, in the order to try them. A Secret that cannot be read is skipped
// with the kubelet's FailedToRetrieveImagePullSecret event
// (getPullSecretsForPod); without an API server no Secret can be read
// (validation refuses such pods at apply).
func (m *Manager) pullCredentials(ctx context.Context, pod *v1.Pod, image string) ([]pullcreds.Credential, error) {
	if len(pod.Spec.ImagePullSecrets) == 0 {
		return nil, nil
	}
	objects := m.opts.Container.Objects
	var secrets []*v1.Secret
	var missing []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue
		}
		if objects == nil {
			missing = append(missing, ref.Name)
			continue
		}
		s, err := objects.GetSecret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			loggerFrom(ctx).Info("cannot read a pull secret; the image pull may not succeed", zap.String("secret", ref.Name), zap.Error(err))
			missing = append(missing, ref.Name)
			continue
		}
		secrets = append(secrets, s)
	}
	if len(missing) > 0 {
		m.opts.Recorder.Eventf(pod, v1.EventTypeWarning, events.FailedToRetrieveImagePullSecret,
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(missing, ", "))
	}
	keyring, err := pullcreds.FromSecrets(secrets)
	if err != nil {
		return nil, err
	}
	return keyring.Lookup(image), nil
}

// restartCountFromLogDir returns one more than the highest "<n>.log" in dir,
// or 0. Matches the kubelet's calcRestartCountByLogDir.
func restartCountFromLogDir(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	count := 0
	for _, e := range entries {
		name := e.Name()
		if filepath.Ext(name) != ".log" {
			continue
		}
		n, err := strconv.Atoi(name[:len(name)-len(".log")])
		if err == nil && n+1 > count {
			count = n + 1
		}
	}
	return count
}

// containerConfig completes the node options with the image's user and
// builds the container's config with generateContainerConfig. The user
// comes from image, the ImageStatus ensureImageExists already made, or
// from a new ImageStatus of imageRef when there is none (after a pull). The
// kubelet's getImageUser always asks again; the first answer describes the
// same image, and a start is one call cheaper.
func (m *Manager) containerConfig(ctx context.Context, pod *v1.Pod, spec *v1.Container, restartCount int, imageRef string, image *runtimeapi.Image, podIPs []string, podStatus *container.PodStatus, imageVolumes map[string]*runtimeapi.ImageSpec) (*runtimeapi.ContainerConfig, error) {
	opts := m.opts.Container
	opts.recorder = m.opts.Recorder
	opts.ImageVolumes = imageVolumes
	if image == nil {
		resp, err := m.images.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: imageRef}})
		if err != nil {
			return nil, fmt.Errorf("inspect image %q: %w", imageRef, err)
		}
		image = resp.GetImage()
	}
	if uid := image.GetUid(); uid != nil {
		v := uid.GetValue()
		opts.ImageUID = &v
	}
	opts.ImageUsername = image.GetUsername()
	if container.WantsRecursiveReadOnly(spec) {
		opts.SupportsRecursiveReadOnly = m.SupportsRecursiveReadOnlyMounts(ctx, pod)
	}
	if isEphemeral(pod, spec.Name) {
		for i := range pod.Spec.EphemeralContainers {
			ec := &pod.Spec.EphemeralContainers[i]
			if ec.Name != spec.Name || ec.TargetContainerName == "" {
				continue
			}
			if cs := podStatus.FindContainerStatusByName(ec.TargetContainerName); cs != nil {
				opts.TargetContainerID = cs.ID.ID
			}
		}
	}
	return generateContainerConfig(ctx, pod, spec, restartCount, podIPs, imageRef, opts)
}

func isEphemeral(pod *v1.Pod, name string) bool {
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return true
		}
	}
	return false
}
