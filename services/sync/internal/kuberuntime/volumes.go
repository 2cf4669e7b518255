package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"
	"go.uber.org/zap"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/volume"
)

// The volume plugins' directory names under <pod>/volumes, the kubelet's.
const (
	configMapPluginDir   = "kubernetes.io~configmap"
	secretPluginDir      = "kubernetes.io~secret"
	downwardAPIPluginDir = "kubernetes.io~downward-api"
	projectedPluginDir   = "kubernetes.io~projected"
)

// isAtomicWriterVolume reports whether the volume's files are written by
// sync (configMap, secret, downwardAPI, projected): such volumes are
// mounted read-only and refreshed on every sync.
func isAtomicWriterVolume(src *v1.VolumeSource) bool {
	return src.ConfigMap != nil || src.Secret != nil || src.DownwardAPI != nil || src.Projected != nil
}

// atomicVolumeDir returns the pod's directory of such a volume, as the
// kubelet's plugins name it: <root>/<uid>/volumes/<plugin>/<name>.
func atomicVolumeDir(pod *v1.Pod, vol *v1.Volume, opts ContainerOptions) string {
	plugin := projectedPluginDir
	switch {
	case vol.ConfigMap != nil:
		plugin = configMapPluginDir
	case vol.Secret != nil:
		plugin = secretPluginDir
	case vol.DownwardAPI != nil:
		plugin = downwardAPIPluginDir
	}
	return filepath.Join(orDefault(opts.PodVolumesRoot, DefaultPodsDir), string(pod.UID), "volumes", plugin, vol.Name)
}

// setUpAtomicVolume writes the volume's current files into its directory
// with the AtomicWriter and returns the directory. It is the SetUpAt of the
// kubelet's configmap, secret, downwardapi and projected plugins; a
// failure reads as the kubelet's `MountVolume.SetUp failed for volume "x" :
// <cause>`.
func setUpAtomicVolume(ctx context.Context, pod *v1.Pod, vol *v1.Volume, volField string, opts ContainerOptions) (string, error) {
	payload, err := volumePayload(ctx, pod, vol, volField, opts)
	if err != nil {
		return "", fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
	}
	dir := atomicVolumeDir(pod, vol, opts)
	// The kubelet wraps these volumes in an emptyDir, whose setupDir makes
	// the directory 0777 whatever the umask: it is the root a container
	// sees at the mount path, so every container user must reach the files.
	if err := opts.fs().MkdirAllExact(dir, 0o777); err != nil {
		return "", fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
	}
	var setPerms func(string) error
	if g := fsGroup(pod); g != nil {
		setPerms = func(d string) error { return volume.SetVolumeOwnership(d, *g) }
	}
	w, err := volume.NewAtomicWriter(dir)
	if err == nil {
		err = w.Write(payload, setPerms)
	}
	if err != nil {
		return "", fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
	}
	return dir, nil
}

// setUpVolumes writes every configMap, secret, downwardAPI and projected
// volume of the pod, so that changes reach running containers (a subPath
// mount keeps the file it was started with, as in the kubelet): the
// kubelet re-runs volume setup on each pod sync the same way. A failure is
// logged and recorded as the kubelet's FailedMount event. A volume that
// failed and was never set up is unmounted: the kubelet's
// WaitForAttachAndMount fails then, and the error returned names those
// volumes with its message. A volume set up before keeps its files.
func (m *Manager) setUpVolumes(ctx context.Context, pod *v1.Pod) error {
	var unmounted []string
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if !isAtomicWriterVolume(&vol.VolumeSource) {
			continue
		}
		if _, err := setUpAtomicVolume(ctx, pod, vol, fmt.Sprintf("spec.volumes[%d]", i), m.opts.Container); err != nil {
			loggerFrom(ctx).Warn("volume setup failed", zap.String("volume", vol.Name), zap.Error(err))
			m.opts.Recorder.Eventf(pod, v1.EventTypeWarning, events.FailedMountVolume, "%v", err)
			if !isSetUp(atomicVolumeDir(pod, vol, m.opts.Container)) {
				unmounted = append(unmounted, vol.Name)
				errs = append(errs, err)
			}
		}
	}
	if len(unmounted) == 0 {
		return nil
	}
	err := fmt.Errorf("unmounted volumes=%v, unattached volumes=[]: %w", unmounted, errors.Join(errs...))
	m.opts.Recorder.Eventf(pod, v1.EventTypeWarning, events.FailedMountVolume, "Unable to attach or mount volumes: %v", err)
	return err
}

// isSetUp reports whether an AtomicWriter volume directory was written
// once (it has a ..data link).
func isSetUp(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, "..data"))
	return err == nil
}

// fsGroup is the pod's securityContext.fsGroup: the group the files of its
// volumes get, as the kubelet's SetVolumeOwnership gives them.
func fsGroup(pod *v1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// defaultVolumeMode is what the API server defaults defaultMode to.
const defaultVolumeMode int32 = 0o644

func modeOr(mode *int32, def int32) int32 {
	if mode != nil {
		return *mode
	}
	return def
}

// volumePayload returns the files of a configMap, secret, downwardAPI or
// projected volume. ConfigMaps, Secrets and tokens need opts.Objects;
// without it they fail with errdefs.ErrNotImplemented naming the field.
func volumePayload(ctx context.Context, pod *v1.Pod, vol *v1.Volume, volField string, opts ContainerOptions) (map[string]volume.FileProjection, error) {
	switch {
	case vol.ConfigMap != nil:
		s := vol.ConfigMap
		return configMapPayload(ctx, pod, s.Name, s.Items, modeOr(s.DefaultMode, defaultVolumeMode), isOptional(s.Optional), volField+".configMap", opts)
	case vol.Secret != nil:
		s := vol.Secret
		return secretPayload(ctx, pod, s.SecretName, s.Items, modeOr(s.DefaultMode, defaultVolumeMode), isOptional(s.Optional), volField+".secret", opts)
	case vol.DownwardAPI != nil:
		return downwardAPIPayload(pod, vol.DownwardAPI.Items, modeOr(vol.DownwardAPI.DefaultMode, defaultVolumeMode), opts)
	case vol.Projected != nil:
		return projectedPayload(ctx, pod, vol.Projected, volField+".projected", opts)
	}
	return nil, fmt.Errorf("%w: %s: not a volume sync writes", errdefs.ErrInvalidArgument, volField)
}

// configMapPayload matches the kubelet's configmap SetUpAt with
// MakePayload: a missing optional ConfigMap gives no files; without items
// every Data and BinaryData key is a file with defaultMode; with items only
// those keys, at their paths and modes, a missing key being an error unless
// optional.
func configMapPayload(ctx context.Context, pod *v1.Pod, name string, items []v1.KeyToPath, defaultMode int32, optional bool, field string, opts ContainerOptions) (map[string]volume.FileProjection, error) {
	if opts.Objects == nil {
		return nil, fmt.Errorf("%w: %s (%q): ConfigMaps need an API server (--kubeconfig)", errdefs.ErrNotImplemented, field, name)
	}
	cm, err := opts.Objects.GetConfigMap(ctx, pod.Namespace, name)
	if err != nil {
		if errors.Is(err, errdefs.ErrNotFound) && optional {
			return map[string]volume.FileProjection{}, nil
		}
		return nil, err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	return makePayload(items, data, defaultMode, optional, "configmap references non-existent config key: %s")
}

// secretPayload is configMapPayload for Secrets (the kubelet's secret
// SetUpAt and MakePayload).
func secretPayload(ctx context.Context, pod *v1.Pod, name string, items []v1.KeyToPath, defaultMode int32, optional bool, field string, opts ContainerOptions) (map[string]volume.FileProjection, error) {
	if opts.Objects == nil {
		return nil, fmt.Errorf("%w: %s (%q): Secrets need an API server (--kubeconfig)", errdefs.ErrNotImplemented, field, name)
	}
	s, err := opts.Objects.GetSecret(ctx, pod.Namespace, name)
	if err != nil {
		if errors.Is(err, errdefs.ErrNotFound) && optional {
			return map[string]volume.FileProjection{}, nil
		}
		return nil, err
	}
	return makePayload(items, s.Data, defaultMode, optional, "references non-existent secret key: %s")
}

func makePayload(items []v1.KeyToPath, data map[string][]byte, defaultMode int32, optional bool, missingKey string) (map[string]volume.FileProjection, error) {
	payload := make(map[string]volume.FileProjection, len(data))
	if len(items) == 0 {
		for k, v := range data {
			payload[k] = volume.FileProjection{Data: v, Mode: defaultMode}
		}
		return payload, nil
	}
	for _, item := range items {
		v, ok := data[item.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("%w: "+missingKey, errdefs.ErrNotFound, item.Key)
		}
		payload[item.Path] = volume.FileProjection{Data: v, Mode: modeOr(item.Mode, defaultMode)}
	}
	return payload, nil
}

// downwardAPIPayload matches the kubelet's downwardapi CollectData: each
// item's fieldRef or resourceFieldRef value, with its mode or defaultMode.
func downwardAPIPayload(pod *v1.Pod, items []v1.DownwardAPIVolumeFile, defaultMode int32, opts ContainerOptions) (map[string]volume.FileProjection, error) {
	payload := make(map[string]volume.FileProjection, len(items))
	var errs []error
	for _, item := range items {
		var value string
		var err error
		switch {
		case item.FieldRef != nil:
			value, err = podFieldSelectorRuntimeValue(item.FieldRef, pod, nil, opts.HostIPs)
		case item.ResourceFieldRef != nil:
			c := findContainer(pod, item.ResourceFieldRef.ContainerName)
			if c == nil {
				err = fmt.Errorf("%w: container %s not found", errdefs.ErrInvalidArgument, item.ResourceFieldRef.ContainerName)
				break
			}
			value, err = containerResourceRuntimeValue(item.ResourceFieldRef, pod, c, opts.allocatable())
		default:
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", item.Path, err))
			continue
		}
		payload[item.Path] = volume.FileProjection{Data: []byte(value), Mode: modeOr(item.Mode, defaultMode)}
	}
	return payload, errors.Join(errs...)
}

// projectedPayload matches the kubelet's projected collectData: the
// sources' files merged in order, the volume's defaultMode standing in for
// theirs; a serviceAccountToken is requested for the pod's service
// account, bound to the pod, with the source's audience and expiry.
func projectedPayload(ctx context.Context, pod *v1.Pod, src *v1.ProjectedVolumeSource, field string, opts ContainerOptions) (map[string]volume.FileProjection, error) {
	defaultMode := modeOr(src.DefaultMode, defaultVolumeMode)
	payload := map[string]volume.FileProjection{}
	var errs []error
	for i, s := range src.Sources {
		sourceField := fmt.Sprintf("%s.sources[%d]", field, i)
		var files map[string]volume.FileProjection
		var err error
		switch {
		case s.ConfigMap != nil:
			files, err = configMapPayload(ctx, pod, s.ConfigMap.Name, s.ConfigMap.Items, defaultMode, isOptional(s.ConfigMap.Optional), sourceField+".configMap", opts)
		case s.Secret != nil:
			files, err = secretPayload(ctx, pod, s.Secret.Name, s.Secret.Items, defaultMode, isOptional(s.Secret.Optional), sourceField+".secret", opts)
		case s.DownwardAPI != nil:
			files, err = downwardAPIPayload(pod, s.DownwardAPI.Items, defaultMode, opts)
		case s.ServiceAccountToken != nil:
			files, err = serviceAccountTokenPayload(ctx, pod, s.ServiceAccountToken, defaultMode, sourceField+".serviceAccountToken", opts)
		case s.ClusterTrustBundle != nil:
			err = fmt.Errorf("%w: %s.clusterTrustBundle: not supported by splitlet", errdefs.ErrNotImplemented, sourceField)
		case s.PodCertificate != nil:
			err = fmt.Errorf("%w: %s.podCertificate: not supported by splitlet", errdefs.ErrNotImplemented, sourceField)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// A later source's file replaces an earlier one's at the same
		// path, as in the kubelet.
		maps.Copy(payload, files)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return payload, nil
}

func serviceAccountTokenPayload(ctx context.Context, pod *v1.Pod, src *v1.ServiceAccountTokenProjection, mode int32, field string, opts ContainerOptions) (map[string]volume.FileProjection, error) {
	// Under an fsGroup the token is 0600, which SetVolumeOwnership makes
	// 0640: readable by the group, not by everyone (the kubelet's
	// projected plugin).
	if fsGroup(pod) != nil {
		mode = 0o600
	}
	if opts.Objects == nil {
		return nil, fmt.Errorf("%w: %s: service account tokens need an API server (--kubeconfig)", errdefs.ErrNotImplemented, field)
	}
	var audiences []string
	if src.Audience != "" {
		audiences = []string{src.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	tr, err := opts.Objects.GetServiceAccountToken(ctx, pod.Namespace, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:         audiences,
			ExpirationSeconds: src.ExpirationSeconds,
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return map[string]volume.FileProjection{src.Path: {Data: []byte(tr.Status.Token), Mode: mode}}, nil
}
