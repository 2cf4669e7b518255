package kuberuntime

import (
	"context"
	"encoding/json"
	"maps"
	"strconv"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// Label keys sync writes on sandboxes and containers. They are the kubelet's
// own keys (pkg/kubelet/types/labels.go), so crictl, log collectors and a
// kubelet reading the runtime see splitlet's pods exactly like the kubelet's.
const (
	KubernetesPodNameLabel       = "io.kubernetes.pod.name"
	KubernetesPodNamespaceLabel  = "io.kubernetes.pod.namespace"
	KubernetesPodUIDLabel        = "io.kubernetes.pod.uid"
	KubernetesContainerNameLabel = "io.kubernetes.container.name"
)

// Annotation keys on containers, as the kubelet's labels.go writes them. The
// kubelet calls them labels for historical reasons; since CRI they are
// annotations, and so are they here. They let sync rebuild what it needs to
// know about a container (hash, restart count, grace period, preStop hook)
// from the runtime alone after a restart.
const (
	PodDeletionGracePeriodLabel    = "io.kubernetes.pod.deletionGracePeriod"
	PodTerminationGracePeriodLabel = "io.kubernetes.pod.terminationGracePeriod"

	ContainerHashLabel                     = "io.kubernetes.container.hash"
	ContainerRestartCountLabel             = "io.kubernetes.container.restartCount"
	ContainerTerminationMessagePathLabel   = "io.kubernetes.container.terminationMessagePath"
	ContainerTerminationMessagePolicyLabel = "io.kubernetes.container.terminationMessagePolicy"
	ContainerPreStopHandlerLabel           = "io.kubernetes.container.preStopHandler"
	ContainerPortsLabel                    = "io.kubernetes.container.ports"
	ContainerTypeLabel                     = "io.kubernetes.container.type"
	// ContainerResourcesLabel is splitlet's own: the requests and limits
	// the container was created with (JSON), its actuated resources until
	// an in-place resize changes them (allocation.Manager then records
	// the new ones, since a container's annotations cannot change).
	ContainerResourcesLabel = "io.splitlet.container.resources"
)

// Values of ContainerTypeLabel, as in the kubelet.
const (
	ContainerTypeInit      = "init"
	ContainerTypeRegular   = "container"
	ContainerTypeEphemeral = "ephemeral"
)

// LabeledPodSandboxInfo is what a sandbox's labels say about its pod.
// Matches the kubelet's labeledPodSandboxInfo.
type LabeledPodSandboxInfo struct {
	// Labels are the pod's own labels, without the io.kubernetes.pod.* ones.
	Labels       map[string]string
	PodName      string
	PodNamespace string
	PodUID       types.UID
}

// LabeledContainerInfo is what a container's labels say about it. Matches the
// kubelet's labeledContainerInfo.
type LabeledContainerInfo struct {
	ContainerName string
	PodName       string
	PodNamespace  string
	PodUID        types.UID
}

// AnnotatedContainerInfo is what a container's annotations say about it.
// Matches the kubelet's annotatedContainerInfo; Resources stands in for the
// kubelet's actuated state of a container not resized since its creation.
type AnnotatedContainerInfo struct {
	Hash                      uint64
	RestartCount              int
	PodDeletionGracePeriod    *int64
	PodTerminationGracePeriod *int64
	TerminationMessagePath    string
	TerminationMessagePolicy  v1.TerminationMessagePolicy
	PreStopHandler            *v1.LifecycleHandler
	ContainerPorts            []v1.ContainerPort
	ContainerType             string
	Resources                 *v1.ResourceRequirements
}

// newPodLabels returns the sandbox labels: the pod's labels plus its name,
// namespace and UID. Matches the kubelet's newPodLabels.
func newPodLabels(pod *v1.Pod) map[string]string {
	labels := make(map[string]string, len(pod.Labels)+3)
	maps.Copy(labels, pod.Labels)
	labels[KubernetesPodNameLabel] = pod.Name
	labels[KubernetesPodNamespaceLabel] = pod.Namespace
	labels[KubernetesPodUIDLabel] = string(pod.UID)
	return labels
}

// newPodAnnotations returns the sandbox annotations: the pod's annotations.
// Matches the kubelet's newPodAnnotations, except that it copies the map, so
// that a later edit of the config cannot write into the pod object.
func newPodAnnotations(pod *v1.Pod) map[string]string {
	return maps.Clone(pod.Annotations)
}

// newContainerLabels returns the labels identifying a container's pod and
// name. Matches the kubelet's newContainerLabels. The pod's own labels are
// deliberately not copied: the runtime filters containers by these four.
func newContainerLabels(c *v1.Container, pod *v1.Pod) map[string]string {
	return map[string]string{
		KubernetesPodNameLabel:       pod.Name,
		KubernetesPodNamespaceLabel:  pod.Namespace,
		KubernetesPodUIDLabel:        string(pod.UID),
		KubernetesContainerNameLabel: c.Name,
	}
}

// newContainerAnnotations returns the annotations recording what sync needs
// to manage the container after a restart of its own. Matches the kubelet's
// newContainerAnnotations (without device plugin annotations or the
// hashWithoutResources annotation). The hash is hexadecimal, the grace
// periods and restart count decimal, the preStop handler and ports JSON, as
// the kubelet writes them, so either can read the other's containers.
func newContainerAnnotations(ctx context.Context, c *v1.Container, pod *v1.Pod, restartCount int) map[string]string {
	log := loggerFrom(ctx)
	annotations := map[string]string{
		ContainerHashLabel:                     strconv.FormatUint(container.HashContainer(c), 16),
		ContainerRestartCountLabel:             strconv.Itoa(restartCount),
		ContainerTerminationMessagePathLabel:   c.TerminationMessagePath,
		ContainerTerminationMessagePolicyLabel: string(c.TerminationMessagePolicy),
	}
	if pod.DeletionGracePeriodSeconds != nil {
		annotations[PodDeletionGracePeriodLabel] = strconv.FormatInt(*pod.DeletionGracePeriodSeconds, 10)
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		annotations[PodTerminationGracePeriodLabel] = strconv.FormatInt(*pod.Spec.TerminationGracePeriodSeconds, 10)
	}
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		// JSON so that the handler can be run after a sync restart even if
		// the pod spec is gone by then (the pod was deleted meanwhile).
		if raw, err := json.Marshal(c.Lifecycle.PreStop); err != nil {
			log.Error("cannot marshal preStop handler", zap.String("container", c.Name), zap.Error(err))
		} else {
			annotations[ContainerPreStopHandlerLabel] = string(raw)
		}
	}
	if len(c.Ports) > 0 {
		if raw, err := json.Marshal(c.Ports); err != nil {
			log.Error("cannot marshal container ports", zap.String("container", c.Name), zap.Error(err))
		} else {
			annotations[ContainerPortsLabel] = string(raw)
		}
	}
	if t := containerTypeOf(pod, c.Name); t != "" {
		annotations[ContainerTypeLabel] = t
	}
	allocated := v1.ResourceRequirements{Requests: c.Resources.Requests, Limits: c.Resources.Limits}
	if raw, err := json.Marshal(allocated); err != nil {
		log.Error("cannot marshal container resources", zap.String("container", c.Name), zap.Error(err))
	} else {
		annotations[ContainerResourcesLabel] = string(raw)
	}
	return annotations
}

// containerTypeOf says which list of the pod spec holds the named container,
// in the kubelet's order of precedence (init, regular, ephemeral).
func containerTypeOf(pod *v1.Pod, name string) string {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return ContainerTypeInit
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return ContainerTypeRegular
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return ContainerTypeEphemeral
		}
	}
	return ""
}

// getPodSandboxInfoFromLabels reads a sandbox's labels back. Matches the
// kubelet's getPodSandboxInfoFromLabels.
func getPodSandboxInfoFromLabels(labels map[string]string) *LabeledPodSandboxInfo {
	info := &LabeledPodSandboxInfo{
		Labels:       make(map[string]string),
		PodName:      labels[KubernetesPodNameLabel],
		PodNamespace: labels[KubernetesPodNamespaceLabel],
		PodUID:       types.UID(labels[KubernetesPodUIDLabel]),
	}
	for k, v := range labels {
		if k != KubernetesPodNameLabel && k != KubernetesPodNamespaceLabel && k != KubernetesPodUIDLabel {
			info.Labels[k] = v
		}
	}
	return info
}

// getContainerInfoFromLabels reads a container's labels back. A missing label
// reads as empty: containers made by someone else (or by an old kubelet) may
// lack some. Matches the kubelet's getContainerInfoFromLabels.
func getContainerInfoFromLabels(labels map[string]string) *LabeledContainerInfo {
	return &LabeledContainerInfo{
		PodName:       labels[KubernetesPodNameLabel],
		PodNamespace:  labels[KubernetesPodNamespaceLabel],
		PodUID:        types.UID(labels[KubernetesPodUIDLabel]),
		ContainerName: labels[KubernetesContainerNameLabel],
	}
}

// getContainerInfoFromAnnotations reads a container's annotations back. Like
// the kubelet's getContainerInfoFromAnnotations, a malformed value is logged
// and read as its zero value rather than failing: one bad annotation must not
// stop sync from managing the rest of the pod.
func getContainerInfoFromAnnotations(ctx context.Context, annotations map[string]string) *AnnotatedContainerInfo {
	log := loggerFrom(ctx)
	bad := func(key string, err error) {
		log.Error("cannot parse container annotation", zap.String("annotation", key), zap.String("value", annotations[key]), zap.Error(err))
	}
	info := &AnnotatedContainerInfo{
		TerminationMessagePath:   annotations[ContainerTerminationMessagePathLabel],
		TerminationMessagePolicy: v1.TerminationMessagePolicy(annotations[ContainerTerminationMessagePolicyLabel]),
		ContainerType:            annotations[ContainerTypeLabel],
	}
	if s, ok := annotations[ContainerHashLabel]; ok {
		h, err := strconv.ParseUint(s, 16, 64)
		if err != nil {
			bad(ContainerHashLabel, err)
		}
		info.Hash = h
	}
	if s, ok := annotations[ContainerRestartCountLabel]; ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			bad(ContainerRestartCountLabel, err)
			n = 0
		}
		info.RestartCount = n
	}
	for key, dst := range map[string]**int64{
		PodDeletionGracePeriodLabel:    &info.PodDeletionGracePeriod,
		PodTerminationGracePeriodLabel: &info.PodTerminationGracePeriod,
	} {
		s, ok := annotations[key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			bad(key, err)
			continue
		}
		*dst = &n
	}
	if s, ok := annotations[ContainerPreStopHandlerLabel]; ok {
		h := &v1.LifecycleHandler{}
		if err := json.Unmarshal([]byte(s), h); err != nil {
			bad(ContainerPreStopHandlerLabel, err)
		} else {
			info.PreStopHandler = h
		}
	}
	if s, ok := annotations[ContainerResourcesLabel]; ok {
		r := &v1.ResourceRequirements{}
		if err := json.Unmarshal([]byte(s), r); err != nil {
			bad(ContainerResourcesLabel, err)
		} else {
			info.Resources = r
		}
	}
	if s, ok := annotations[ContainerPortsLabel]; ok {
		var ports []v1.ContainerPort
		if err := json.Unmarshal([]byte(s), &ports); err != nil {
			bad(ContainerPortsLabel, err)
		} else {
			info.ContainerPorts = ports
		}
	}
	return info
}
