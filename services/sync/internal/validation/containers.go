package validation

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateContainers matches validateContainers: at least one container,
// names unique among regular containers (collisions with init and ephemeral
// containers are reported on those), probes and hooks allowed, a
// container-level restartPolicy and restartPolicyRules as
// validateContainerRestartPolicy allows them, host ports unique across
// containers.
func validateContainers(containers []v1.Container, vols map[string]v1.VolumeSource, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range containers {
		c := &containers[i]
		idxPath := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(c, vols, idxPath)...)
		if names.Has(c.Name) {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
		allErrs = append(allErrs, validateProbesAndLifecycle(c, gracePeriod, idxPath)...)
		allErrs = append(allErrs, validateContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, idxPath)...)
	}
	allErrs = append(allErrs, checkHostPortConflicts(containers, fldPath)...)
	return allErrs
}

// validateInitContainers matches validateInitContainers: names unique across
// init and regular containers; restartPolicy and restartPolicyRules as
// validateInitContainerRestartPolicy allows them (Always makes a sidecar);
// only sidecars may have probes and lifecycle hooks; host ports are checked
// per init container because they run one at a time.
func validateInitContainers(inits, regular []v1.Container, vols map[string]v1.VolumeSource, gracePeriod *int64, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for _, c := range regular {
		names.Insert(c.Name)
	}
	for i := range inits {
		c := &inits[i]
		idxPath := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(c, vols, idxPath)...)

		allErrs = append(allErrs, validateInitContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, idxPath)...)
		restartable := c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		if names.Has(c.Name) {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), c.Name))
		} else if c.Name != "" {
			names.Insert(c.Name)
		}
		allErrs = append(allErrs, checkHostPortConflicts([]v1.Container{*c}, fldPath)...)

		if restartable {
			allErrs = append(allErrs, validateProbesAndLifecycle(c, gracePeriod, idxPath)...)
			continue
		}
		const msg = "may not be set for init containers without restartPolicy=Always"
		if c.Lifecycle != nil {
			allErrs = append(allErrs, field.Forbidden(idxPath.Child("lifecycle"), msg))
		}
		if c.LivenessProbe != nil {
			allErrs = append(allErrs, field.Forbidden(idxPath.Child("livenessProbe"), msg))
		}
		if c.ReadinessProbe != nil {
			allErrs = append(allErrs, field.Forbidden(idxPath.Child("readinessProbe"), msg))
		}
		if c.StartupProbe != nil {
			allErrs = append(allErrs, field.Forbidden(idxPath.Child("startupProbe"), msg))
		}
	}
	return allErrs
}

// allowedEphemeralContainerFields is the API server's allow-list: an
// ephemeral container is a debugging aid and may not carry ports, probes,
// resources or hooks the pod would come to depend on.
var allowedEphemeralContainerFields = sets.New(
	"Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env",
	"VolumeMounts", "VolumeDevices", "TerminationMessagePath",
	"TerminationMessagePolicy", "ImagePullPolicy", "SecurityContext",
	"Stdin", "StdinOnce", "TTY",
)

// validateEphemeralContainers matches validateEphemeralContainers: names
// unique across all three kinds, the target container must be a regular or
// init container, only allow-listed fields, no subPath mounts.
func validateEphemeralContainers(ephemeral []v1.EphemeralContainer, regular, inits []v1.Container, vols map[string]v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	if len(ephemeral) == 0 {
		return nil
	}
	var allErrs field.ErrorList
	others, all := sets.New[string](), sets.New[string]()
	for _, c := range regular {
		others.Insert(c.Name)
		all.Insert(c.Name)
	}
	for _, c := range inits {
		others.Insert(c.Name)
		all.Insert(c.Name)
	}
	for i := range ephemeral {
		ec := &ephemeral[i]
		idxPath := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon((*v1.Container)(&ec.EphemeralContainerCommon), vols, idxPath)...)
		if all.Has(ec.Name) {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), ec.Name))
		} else {
			all.Insert(ec.Name)
		}
		if ec.TargetContainerName != "" && !others.Has(ec.TargetContainerName) {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("targetContainerName"), ec.TargetContainerName))
		}
		allErrs = append(allErrs, validateFieldAllowList(ec.EphemeralContainerCommon, allowedEphemeralContainerFields, "cannot be set for an Ephemeral Container", idxPath)...)
		for j, vm := range ec.VolumeMounts {
			if vm.SubPath != "" {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("volumeMounts").Index(j).Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
			if vm.SubPathExpr != "" {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("volumeMounts").Index(j).Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	return allErrs
}

// validateFieldAllowList reports every set field of a struct value that is
// not allowed, by its JSON-style name (lower-case first letter), as the API
// server's validateFieldAllowList does.
func validateFieldAllowList(value any, allowed sets.Set[string], msg string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rt, rv := reflect.TypeOf(value), reflect.ValueOf(value)
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		if allowed.Has(f.Name) || rv.Field(i).IsZero() {
			continue
		}
		r, n := utf8.DecodeRuneInString(f.Name)
		allErrs = append(allErrs, field.Forbidden(fldPath.Child(string(unicode.ToLower(r))+f.Name[n:]), msg))
	}
	return allErrs
}

// validateContainerCommon matches validateContainerCommon plus the
// pod-only image whitespace check (validateContainerOnlyForPod).
func validateContainerCommon(c *v1.Container, vols map[string]v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	namePath := fldPath.Child("name")
	if c.Name == "" {
		allErrs = append(allErrs, field.Required(namePath, ""))
	} else {
		allErrs = append(allErrs, validateDNS1123Label(c.Name, namePath)...)
	}

	imagePath := fldPath.Child("image")
	switch {
	case strings.TrimSpace(c.Image) == "":
		// The API server tolerates " " in templates only; a pod needs an image.
		allErrs = append(allErrs, field.Required(imagePath, ""))
	case len(strings.TrimSpace(c.Image)) != len(c.Image):
		allErrs = append(allErrs, field.Invalid(imagePath, c.Image, "must not have leading or trailing whitespace"))
	}

	switch c.TerminationMessagePolicy {
	case v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError:
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("terminationMessagePolicy"), ""))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]v1.TerminationMessagePolicy{v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError}))
	}

	switch c.ImagePullPolicy {
	case v1.PullAlways, v1.PullIfNotPresent, v1.PullNever:
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("imagePullPolicy"), ""))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("imagePullPolicy"), c.ImagePullPolicy,
			[]v1.PullPolicy{v1.PullAlways, v1.PullIfNotPresent, v1.PullNever}))
	}

	allErrs = append(allErrs, validateContainerPorts(c.Ports, fldPath.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(c.Env, vols, fldPath.Child("env"))...)
	allErrs = append(allErrs, validateEnvFrom(c.EnvFrom, fldPath.Child("envFrom"))...)
	allErrs = append(allErrs, validateVolumeMounts(c.VolumeMounts, vols, fldPath.Child("volumeMounts"))...)
	allErrs = append(allErrs, validateContainerResources(&c.Resources, fldPath.Child("resources"))...)
	allErrs = append(allErrs, validateSecurityContext(c.SecurityContext, fldPath.Child("securityContext"))...)
	return allErrs
}

var supportedPortProtocols = []v1.Protocol{v1.ProtocolSCTP, v1.ProtocolTCP, v1.ProtocolUDP}

// validateContainerPorts matches validateContainerPorts.
func validateContainerPorts(ports []v1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		idxPath := fldPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				allErrs = append(allErrs, field.Duplicate(idxPath.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(idxPath.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("hostPort"), port.HostPort, msg))
			}
		}
		switch port.Protocol {
		case v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP:
		case "":
			allErrs = append(allErrs, field.Required(idxPath.Child("protocol"), ""))
		default:
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("protocol"), port.Protocol, supportedPortProtocols))
		}
	}
	return allErrs
}

// checkHostPortConflicts matches AccumulateUniqueHostPorts: two containers
// may not claim the same protocol/hostIP/hostPort.
func checkHostPortConflicts(containers []v1.Container, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, c := range containers {
		for j, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				allErrs = append(allErrs, field.Duplicate(fldPath.Index(i).Child("ports").Index(j).Child("hostPort"), key))
			} else {
				seen.Insert(key)
			}
		}
	}
	return allErrs
}

// validateEnv matches ValidateEnv with RelaxedEnvironmentVariableValidation
// (GA and locked on in v1.36: a name is any printable ASCII but '=') and
// the one-source rule of validateEnvVarValueFrom.
func validateEnv(vars []v1.EnvVar, vols map[string]v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range vars {
		idxPath := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("name"), ev.Name, msg))
			}
		}
		if ev.ValueFrom == nil {
			continue
		}
		vf := ev.ValueFrom
		sources := 0
		for _, set := range []bool{vf.FieldRef != nil, vf.ResourceFieldRef != nil, vf.ConfigMapKeyRef != nil, vf.SecretKeyRef != nil, vf.FileKeyRef != nil} {
			if set {
				sources++
			}
		}
		vfPath := idxPath.Child("valueFrom")
		switch {
		case sources == 0:
			allErrs = append(allErrs, field.Invalid(vfPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
		case ev.Value != "":
			allErrs = append(allErrs, field.Invalid(vfPath, "", "may not be specified when `value` is not empty"))
		case sources > 1:
			allErrs = append(allErrs, field.Invalid(vfPath, "", "may not have more than one field specified at a time"))
		}
		if vf.FieldRef != nil && vf.FieldRef.FieldPath == "" {
			allErrs = append(allErrs, field.Required(vfPath.Child("fieldRef", "fieldPath"), ""))
		}
		if vf.FileKeyRef != nil {
			allErrs = append(allErrs, validateFileKeySelector(vf.FileKeyRef, vols, vfPath.Child("fileKeyRef"))...)
		}
	}
	return allErrs
}

// validateFileKeySelector matches validateFileKeySelector and, for the
// volume, validateFileKeyRefVolumes: a key named as env vars are, a volume
// of the pod that is an emptyDir, a path without "..".
func validateFileKeySelector(s *v1.FileKeySelector, vols map[string]v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.Key == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("key"), ""))
	} else {
		for _, msg := range validation.IsRelaxedEnvVarName(s.Key) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("key"), s.Key, msg))
		}
	}
	volPath := fldPath.Child("volumeName")
	if s.VolumeName == "" {
		allErrs = append(allErrs, field.Required(volPath, ""))
	} else if src, ok := vols[s.VolumeName]; !ok {
		allErrs = append(allErrs, field.NotFound(volPath, s.VolumeName))
	} else if src.EmptyDir == nil {
		allErrs = append(allErrs, field.Invalid(volPath, s.VolumeName, "referenced volume must be of type emptyDir"))
	}
	if s.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	} else if slices.Contains(strings.Split(path.Clean("/" + s.Path)[1:], "/"), "..") || slices.Contains(strings.Split(s.Path, "/"), "..") {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), s.Path, "must not contain '..'"))
	}
	return allErrs
}

// validateEnvFrom matches ValidateEnvFrom, whose prefix follows the relaxed
// name rule too.
func validateEnvFrom(vars []v1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range vars {
		idxPath := fldPath.Index(i)
		if ev.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Prefix) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("prefix"), ev.Prefix, msg))
			}
		}
		switch {
		case ev.ConfigMapRef == nil && ev.SecretRef == nil:
			allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		case ev.ConfigMapRef != nil && ev.SecretRef != nil:
			allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		case ev.ConfigMapRef != nil && ev.ConfigMapRef.Name == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("configMapRef", "name"), ""))
		case ev.SecretRef != nil && ev.SecretRef.Name == "":
			allErrs = append(allErrs, field.Required(idxPath.Child("secretRef", "name"), ""))
		}
	}
	return allErrs
}

// validateVolumeMounts matches ValidateVolumeMounts: a mount names an
// existing volume, mount paths are unique, subPath stays inside the volume.
func validateVolumeMounts(mounts []v1.VolumeMount, vols map[string]v1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	mountPoints := sets.New[string]()
	for i, m := range mounts {
		idxPath := fldPath.Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("name"), ""))
		}
		if _, ok := vols[m.Name]; !ok {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("mountPath"), ""))
		}
		if mountPoints.Has(m.MountPath) {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPoints.Insert(m.MountPath)
		if m.SubPath != "" {
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPath, idxPath.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPathExpr, idxPath.Child("subPathExpr"))...)
		}
		allErrs = append(allErrs, validateMountRecursiveReadOnly(m, idxPath.Child("recursiveReadOnly"))...)
	}
	return allErrs
}

// validateMountRecursiveReadOnly matches validateMountRecursiveReadOnly:
// Enabled and IfPossible need a read-only mount without propagation.
func validateMountRecursiveReadOnly(m v1.VolumeMount, fldPath *field.Path) field.ErrorList {
	if m.RecursiveReadOnly == nil {
		return nil
	}
	var allErrs field.ErrorList
	switch *m.RecursiveReadOnly {
	case v1.RecursiveReadOnlyDisabled:
	case v1.RecursiveReadOnlyEnabled, v1.RecursiveReadOnlyIfPossible:
		if !m.ReadOnly {
			allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when readOnly is true"))
		}
		if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
			allErrs = append(allErrs, field.Forbidden(fldPath, "may only be specified when mountPropagation is None or not specified"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath, *m.RecursiveReadOnly,
			[]v1.RecursiveReadOnlyMode{v1.RecursiveReadOnlyDisabled, v1.RecursiveReadOnlyEnabled, v1.RecursiveReadOnlyIfPossible}))
	}
	return allErrs
}

// validateLocalDescendingPath matches validateLocalDescendingPath: relative,
// and no ".." element.
func validateLocalDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if path.IsAbs(p) {
		allErrs = append(allErrs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	for _, elem := range strings.Split(p, "/") {
		if elem == ".." {
			allErrs = append(allErrs, field.Invalid(fldPath, p, "must not contain '..'"))
			break
		}
	}
	return allErrs
}
