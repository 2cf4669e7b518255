package kuberuntime

import (
	"context"
	"fmt"
	"maps"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/events"
)

// Image volumes (ImageVolume, GA and locked on in v1.36): a pod volume
// `image: {reference, pullPolicy}` is an OCI image the runtime mounts
// read-only into each container that mounts the volume. Sync pulls the
// image like a container's (getImageVolumes), then hands the runtime a
// mount naming the image instead of a host path (makeMounts); there is
// nothing on the node's filesystem to set up or clean up.

// imageVolumePulls are the pull results of a pod's image volumes, by
// volume name. Matches the kubelet's imageVolumePulls.
type imageVolumePulls map[string]imageVolumePullResult

// imageVolumePullResult is one image volume's pull: spec when the image is
// there, else why not (waiting) and the error.
type imageVolumePullResult struct {
	spec    *runtimeapi.ImageSpec
	waiting *WaitingReason
	err     error
}

// getImageVolumes makes the image of each of the pod's image volumes
// present, with the volume's pullPolicy and the pod's imagePullSecrets,
// through the containers' puller (ensureImage: same back-off, same pull
// records); its events name the pod, not a container. A failure is kept
// in the result, not returned: only the containers that mount the volume
// fail, when they are started (toContainerImageVolumes). Nil when the pod
// has no image volume. Matches the kubelet's getImageVolumes.
//
// The v1.36.3 kubelet calls it on every SyncPod; SyncPod calls it only
// when a container is about to start (past its crash-loop back-off), as
// kubernetes/kubernetes#138655 (merged after v1.36.3) does, so that the
// syncs of a running or crash-looping pod neither pull nor record a Pulled
// event for each image volume every time.
func (m *Manager) getImageVolumes(ctx context.Context, pod *v1.Pod, sbConfig *runtimeapi.PodSandboxConfig) imageVolumePulls {
	var res imageVolumePulls
	event := func(eventtype, reason, messageFmt string, args ...any) {
		m.opts.Recorder.Eventf(pod, eventtype, reason, messageFmt, args...)
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Image == nil {
			continue
		}
		if res == nil {
			res = imageVolumePulls{}
		}
		ref, _, waiting, err := m.ensureImage(ctx, pod, vol.Image.Reference, vol.Image.PullPolicy, sbConfig, event)
		if err != nil {
			loggerFrom(ctx).Warn("image volume not available", zap.String("volume", vol.Name), zap.String("image", vol.Image.Reference), zap.Error(err))
			res[vol.Name] = imageVolumePullResult{waiting: waiting, err: fmt.Errorf("image volume %q: %w", vol.Name, err)}
			continue
		}
		res[vol.Name] = imageVolumePullResult{spec: &runtimeapi.ImageSpec{
			Image:              ref,
			UserSpecifiedImage: vol.Image.Reference,
			Annotations:        maps.Clone(pod.Annotations),
		}}
	}
	return res
}

// toContainerImageVolumes returns the images of the image volumes the
// container mounts, by volume name, for makeMounts. When one of them is
// missing the container does not start: each such mount records the
// kubelet's Failed event ("Error: ErrImagePull") on the container, and the
// last one's reason and message become its waiting reason, so it shows
// ErrImagePull, ImagePullBackOff or ErrImageNeverPull as for its own
// image. Matches the kubelet's toKubeContainerImageVolumes.
func (m *Manager) toContainerImageVolumes(pod *v1.Pod, spec *v1.Container, pulls imageVolumePulls) (map[string]*runtimeapi.ImageSpec, error) {
	if len(pulls) == 0 {
		return nil, nil
	}
	vols := map[string]*runtimeapi.ImageSpec{}
	var failed *imageVolumePullResult
	for _, vm := range spec.VolumeMounts {
		res, ok := pulls[vm.Name]
		if !ok {
			continue
		}
		if res.err != nil {
			m.opts.Recorder.EventfContainer(pod, spec.Name, v1.EventTypeWarning, events.FailedToCreateContainer, "Error: %s", res.waiting.Reason)
			failed = &res
			continue
		}
		vols[vm.Name] = res.spec
	}
	if failed != nil {
		m.setWaiting(pod.UID, spec.Name, failed.waiting)
		return nil, failed.err
	}
	return vols, nil
}

// imageVolumeSpec returns the image to mount for an image volume: the one
// getImageVolumes made present (ContainerOptions.ImageVolumes).
func imageVolumeSpec(vol *v1.Volume, volField string, opts ContainerOptions) (*runtimeapi.ImageSpec, error) {
	if img := opts.ImageVolumes[vol.Name]; img != nil {
		return img, nil
	}
	return nil, fmt.Errorf("%w: %s.image: image %q was not pulled", errdefs.ErrFailedPrecondition, volField, vol.Image.Reference)
}

// podImageVolume returns the pod's volume of that name and its field path
// when it is an image volume, else nil.
func podImageVolume(pod *v1.Pod, name string) (*v1.Volume, string) {
	for i := range pod.Spec.Volumes {
		if vol := &pod.Spec.Volumes[i]; vol.Name == name && vol.Image != nil {
			return vol, fmt.Sprintf("spec.volumes[%d]", i)
		}
	}
	return nil, ""
}
