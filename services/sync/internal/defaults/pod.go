package defaults

import (
	"github.com/distribution/reference"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default mode bits of projected files (0644), as in core/v1.
const defaultFileMode int32 = 0o644

// defaultTokenExpirationSeconds is one hour, as in
// SetDefaults_ServiceAccountTokenProjection.
const defaultTokenExpirationSeconds int64 = 3600

// SetDefaults_Pod applies, in place, every default the API server applies
// to a v1 Pod on create: the generated SetObjectDefaults_Pod of
// kubernetes pkg/apis/core/v1 (SetDefaults_Pod, SetDefaults_PodSpec,
// SetDefaults_Container, SetDefaults_Probe, SetDefaults_HTTPGetAction,
// SetDefaults_Volume and the volume-source defaults, SetDefaults_ResourceList,
// the `+default` markers such as port protocol TCP) plus the namespace the
// API server takes from the request ("default" when empty).
//
// Fields already set are never changed; in particular an init container's
// restartPolicy (Always makes it a sidecar) is kept.
//
//nolint:revive,staticcheck // named after the API server's function.
func SetDefaults_Pod(pod *v1.Pod) {
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	spec := &pod.Spec

	// Requests default to limits before anything reads them (QoS, pod-level
	// requests).
	for i := range spec.Containers {
		defaultRequestsFromLimits(&spec.Containers[i].Resources)
	}
	for i := range spec.InitContainers {
		defaultRequestsFromLimits(&spec.InitContainers[i].Resources)
	}
	defaultPodRequests(pod)

	if spec.EnableServiceLinks == nil {
		enable := v1.DefaultEnableServiceLinks
		spec.EnableServiceLinks = &enable
	}
	if spec.HostNetwork {
		defaultHostNetworkPorts(spec.Containers)
		defaultHostNetworkPorts(spec.InitContainers)
	}

	setDefaultsPodSpec(spec)

	for i := range spec.Volumes {
		setDefaultsVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		setDefaultsContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		setDefaultsContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		setDefaultsContainer((*v1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	if spec.Resources != nil {
		roundResourceList(spec.Resources.Limits)
		roundResourceList(spec.Resources.Requests)
	}
	roundResourceList(spec.Overhead)
}

// setDefaultsPodSpec matches SetDefaults_PodSpec.
func setDefaultsPodSpec(spec *v1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = v1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = v1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &v1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		period := int64(v1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &period
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = v1.DefaultSchedulerName
	}
}

// setDefaultsContainer matches SetDefaults_Container plus the defaults the
// generated code applies to a container's nested objects.
func setDefaultsContainer(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = DefaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = v1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = v1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = v1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	roundResourceList(c.Resources.Limits)
	roundResourceList(c.Resources.Requests)
	for _, p := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p != nil {
			setDefaultsProbe(p)
		}
	}
	if c.Lifecycle != nil {
		for _, h := range []*v1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil && h.HTTPGet != nil {
				setDefaultsHTTPGet(h.HTTPGet)
			}
		}
	}
}

// DefaultPullPolicy is the pull policy of an image with none set: Always for
// the tag "latest" or no tag and no digest, IfNotPresent otherwise
// (a digest, or any other tag). An unparsable reference gets IfNotPresent;
// validation and the runtime report it.
//
// Matches SetDefaults_Container with parsers.ParseImageName, which treats a
// reference without tag or digest as ":latest".
func DefaultPullPolicy(image string) v1.PullPolicy {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return v1.PullIfNotPresent
	}
	tag := ""
	if tagged, ok := named.(reference.Tagged); ok {
		tag = tagged.Tag()
	}
	_, digested := named.(reference.Digested)
	if tag == "latest" || (tag == "" && !digested) {
		return v1.PullAlways
	}
	return v1.PullIfNotPresent
}

// setDefaultsProbe matches SetDefaults_Probe and the defaults of its handler.
func setDefaultsProbe(p *v1.Probe) {
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	if p.HTTPGet != nil {
		setDefaultsHTTPGet(p.HTTPGet)
	}
	if p.GRPC != nil && p.GRPC.Service == nil {
		// `+default=""` on GRPCAction.Service.
		empty := ""
		p.GRPC.Service = &empty
	}
}

// setDefaultsHTTPGet matches SetDefaults_HTTPGetAction.
func setDefaultsHTTPGet(h *v1.HTTPGetAction) {
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = v1.URISchemeHTTP
	}
}

// defaultRequestsFromLimits is the container part of SetDefaults_Pod: a
// limit without a request makes the request equal to the limit.
func defaultRequestsFromLimits(r *v1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = make(v1.ResourceList, len(r.Limits))
	}
	for name, lim := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = lim.DeepCopy()
		}
	}
}

// defaultHostNetworkPorts matches defaultHostNetworkPorts: with host
// networking a container port is also the host port.
func defaultHostNetworkPorts(containers []v1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			if containers[i].Ports[j].HostPort == 0 {
				containers[i].Ports[j].HostPort = containers[i].Ports[j].ContainerPort
			}
		}
	}
}

// roundResourceList matches SetDefaults_ResourceList: quantities are rounded
// up to milli precision (1.0001m becomes 2m).
func roundResourceList(list v1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

// setDefaultsVolume matches SetDefaults_Volume and the defaults of the
// volume sources a node can serve.
func setDefaultsVolume(vol *v1.Volume) {
	if !hasVolumeSource(&vol.VolumeSource) {
		vol.EmptyDir = &v1.EmptyDirVolumeSource{}
	}
	src := &vol.VolumeSource
	switch {
	case src.Secret != nil && src.Secret.DefaultMode == nil:
		src.Secret.DefaultMode = ptrTo(defaultFileMode)
	case src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil:
		src.ConfigMap.DefaultMode = ptrTo(defaultFileMode)
	case src.DownwardAPI != nil:
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = ptrTo(defaultFileMode)
		}
		defaultDownwardAPIItems(src.DownwardAPI.Items)
	case src.Projected != nil:
		if src.Projected.DefaultMode == nil {
			src.Projected.DefaultMode = ptrTo(defaultFileMode)
		}
		for i := range src.Projected.Sources {
			ps := &src.Projected.Sources[i]
			if ps.ServiceAccountToken != nil && ps.ServiceAccountToken.ExpirationSeconds == nil {
				ps.ServiceAccountToken.ExpirationSeconds = ptrTo(defaultTokenExpirationSeconds)
			}
			if ps.DownwardAPI != nil {
				defaultDownwardAPIItems(ps.DownwardAPI.Items)
			}
		}
	case src.HostPath != nil && src.HostPath.Type == nil:
		src.HostPath.Type = ptrTo(v1.HostPathUnset)
	case src.Image != nil && src.Image.PullPolicy == "":
		// SetDefaults_Volume parses the reference like a container image.
		src.Image.PullPolicy = DefaultPullPolicy(src.Image.Reference)
	}
	if src.EmptyDir != nil && src.EmptyDir.SizeLimit != nil {
		src.EmptyDir.SizeLimit.RoundUp(-3)
	}
}

func defaultDownwardAPIItems(items []v1.DownwardAPIVolumeFile) {
	for i := range items {
		if items[i].FieldRef != nil && items[i].FieldRef.APIVersion == "" {
			items[i].FieldRef.APIVersion = "v1"
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
