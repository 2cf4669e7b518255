package validation

import (
	"fmt"
	"math"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	unversionedvalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AsError returns nil for an empty list, otherwise an error wrapping
// errdefs.ErrInvalidArgument whose text lists every field error.
func AsError(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", errdefs.ErrInvalidArgument, errs.ToAggregate())
}

// ValidatePod returns every problem of a defaulted pod about to be created,
// each naming its field path. An empty list means the pod may be started.
//
// Matches ValidatePodCreate / validatePodMetadataAndSpec (see the package
// comment for the differences).
func ValidatePod(pod *v1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	// Name (DNS subdomain), namespace (DNS label), labels, annotations,
	// finalizers and owner references, with apimachinery's own rules.
	allErrs := apimachineryvalidation.ValidateObjectMeta(&pod.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, metaPath)
	allErrs = append(allErrs, validatePodAnnotations(pod, metaPath.Child("annotations"))...)
	allErrs = append(allErrs, validatePodSpec(&pod.Spec, field.NewPath("spec"))...)
	return allErrs
}

func validatePodAnnotations(pod *v1.Pod, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if value, isMirror := pod.Annotations[v1.MirrorPodAnnotationKey]; isMirror && pod.Spec.NodeName == "" {
		allErrs = append(allErrs, field.Invalid(fldPath.Key(v1.MirrorPodAnnotationKey), value, "must set spec.nodeName if mirror pod annotation is set"))
	}
	return allErrs
}

// validatePodSpec matches ValidatePodSpec.
func validatePodSpec(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList

	gracePeriod := spec.TerminationGracePeriodSeconds
	if gracePeriod == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	} else {
		if errs := apimachineryvalidation.ValidateNonnegativeField(*gracePeriod, fldPath.Child("terminationGracePeriodSeconds")); len(errs) > 0 {
			allErrs = append(allErrs, errs...)
			// Already reported; sleep hooks would only repeat it.
			gracePeriod = nil
		}
	}

	vols, volErrs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))
	allErrs = append(allErrs, volErrs...)
	allErrs = append(allErrs, validateContainers(spec.Containers, vols, gracePeriod, fldPath.Child("containers"))...)
	allErrs = append(allErrs, validateInitContainers(spec.InitContainers, spec.Containers, vols, gracePeriod, fldPath.Child("initContainers"))...)
	allErrs = append(allErrs, validateEphemeralContainers(spec.EphemeralContainers, spec.Containers, spec.InitContainers, vols, fldPath.Child("ephemeralContainers"))...)
	allErrs = append(allErrs, validatePodResources(spec, fldPath.Child("resources"))...)
	allErrs = append(allErrs, validateHostNetworkPorts(spec, fldPath)...)
	allErrs = append(allErrs, validateRestartPolicy(spec.RestartPolicy, fldPath.Child("restartPolicy"))...)
	allErrs = append(allErrs, validateDNSPolicy(spec, fldPath)...)
	allErrs = append(allErrs, unversionedvalidation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	allErrs = append(allErrs, validatePodSecurityContext(spec.SecurityContext, fldPath.Child("securityContext"))...)
	allErrs = append(allErrs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	allErrs = append(allErrs, validateHostAliases(spec.HostAliases, fldPath.Child("hostAliases"))...)
	allErrs = append(allErrs, validateBounds(spec, fldPath)...)
	allErrs = append(allErrs, validateUserNamespaces(spec, fldPath)...)

	if spec.ServiceAccountName != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(spec.ServiceAccountName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("serviceAccountName"), spec.ServiceAccountName, msg))
		}
	}
	if spec.NodeName != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(spec.NodeName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeName"), spec.NodeName, msg))
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		if v := *spec.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if spec.Hostname != "" {
		allErrs = append(allErrs, validateDNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		allErrs = append(allErrs, validateDNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	allErrs = append(allErrs, validatePodHostName(spec, fldPath)...)
	if spec.PriorityClassName != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(spec.PriorityClassName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("priorityClassName"), spec.PriorityClassName, msg))
		}
	}
	if spec.RuntimeClassName != nil {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*spec.RuntimeClassName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("runtimeClassName"), *spec.RuntimeClassName, msg))
		}
	}
	return allErrs
}

// validatePodHostName matches validatePodHostName (HostnameOverride, on by
// default in v1.36): hostnameOverride is a DNS subdomain of at most 64
// characters, and neither setHostnameAsFQDN nor hostNetwork go with it.
func validatePodHostName(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.HostnameOverride == nil {
		return nil
	}
	var allErrs field.ErrorList
	p := fldPath.Child("hostnameOverride")
	if spec.SetHostnameAsFQDN != nil && *spec.SetHostnameAsFQDN {
		allErrs = append(allErrs, field.Forbidden(p, "may not be specified when setHostnameAsFQDN is true"))
	}
	if spec.HostNetwork {
		allErrs = append(allErrs, field.Forbidden(p, "may not be specified when hostNetwork is true"))
	}
	if len(*spec.HostnameOverride) > 64 {
		allErrs = append(allErrs, field.TooLong(p, "", 64))
	}
	for _, msg := range validation.IsDNS1123Subdomain(*spec.HostnameOverride) {
		allErrs = append(allErrs, field.Invalid(p, *spec.HostnameOverride, msg))
	}
	return allErrs
}

func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

// validateRestartPolicy matches validateRestartPolicy.
func validateRestartPolicy(p v1.RestartPolicy, fldPath *field.Path) field.ErrorList {
	switch p {
	case v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	default:
		return field.ErrorList{field.NotSupported(fldPath, p, []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever})}
	}
}

// validateDNSPolicy matches validateDNSPolicy and the DNSNone part of
// validatePodDNSConfig.
func validateDNSPolicy(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	policyPath := fldPath.Child("dnsPolicy")
	switch spec.DNSPolicy {
	case v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault:
	case v1.DNSNone:
		cfgPath := fldPath.Child("dnsConfig")
		if spec.DNSConfig == nil {
			return field.ErrorList{field.Required(cfgPath, "must provide `dnsConfig` when `dnsPolicy` is None")}
		}
		if len(spec.DNSConfig.Nameservers) == 0 {
			return field.ErrorList{field.Required(cfgPath.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")}
		}
	case "":
		return field.ErrorList{field.Required(policyPath, "")}
	default:
		return field.ErrorList{field.NotSupported(policyPath, spec.DNSPolicy,
			[]v1.DNSPolicy{v1.DNSClusterFirstWithHostNet, v1.DNSClusterFirst, v1.DNSDefault, v1.DNSNone})}
	}
	return nil
}

// validateHostNetworkPorts matches validatePodHostNetworkDeps for a Pod: with
// host networking a container port is the host port, so a different host
// port cannot be honoured.
func validateHostNetworkPorts(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var allErrs field.ErrorList
	for i, c := range spec.Containers {
		for j, port := range c.Ports {
			if port.HostPort != port.ContainerPort {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"),
					port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return allErrs
}

// validatePodSecurityContext checks the ids and the seccomp profile, as
// validatePodSpecSecurityContext.
func validatePodSecurityContext(sc *v1.PodSecurityContext, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	allErrs := validateIDs(sc.RunAsUser, sc.RunAsGroup, fldPath)
	allErrs = append(allErrs, validateSeccompProfileField(sc.SeccompProfile, fldPath.Child("seccompProfile"))...)
	if sc.FSGroup != nil {
		for _, msg := range validation.IsValidGroupID(*sc.FSGroup) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("fsGroup"), *sc.FSGroup, msg))
		}
	}
	for i, gid := range sc.SupplementalGroups {
		for _, msg := range validation.IsValidGroupID(gid) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("supplementalGroups").Index(i), gid, msg))
		}
	}
	return allErrs
}

// validateTolerations matches ValidateTolerations.
func validateTolerations(tolerations []v1.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range tolerations {
		idxPath := fldPath.Index(i)
		if t.Key != "" {
			allErrs = append(allErrs, unversionedvalidation.ValidateLabelName(t.Key, idxPath.Child("key"))...)
		}
		if t.Key == "" && t.Operator != v1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != v1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case v1.TolerationOpEqual, "":
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Value, msg))
			}
		case v1.TolerationOpExists:
			if t.Value != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("operator"), t.Operator, []v1.TolerationOperator{v1.TolerationOpEqual, v1.TolerationOpExists}))
		}
		switch t.Effect {
		case "", v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		default:
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("effect"), t.Effect,
				[]v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute}))
		}
	}
	return allErrs
}
