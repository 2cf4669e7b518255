package kuberuntime

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// EnvVar is one variable of a container's environment, resolved. Matches the
// kubelet's kubecontainer.EnvVar.
type EnvVar struct {
	Name  string
	Value string
}

// The $(VAR) syntax of container env values, command, args and subPathExpr.
const (
	expansionOperator = '$'
	referenceOpener   = '('
	referenceCloser   = ')'
)

// expandVars replaces every $(NAME) in input by mapping(NAME), with the rules
// of the kubelet's third_party/forked/golang/expansion Expand:
//   - "$$" is an escaped "$": "$$(VAR)" yields the literal "$(VAR)";
//   - "$(" without a closing ")" is kept as is;
//   - "$" followed by anything else, or at the end, is kept as is;
//   - what mapping returns is not expanded again.
func expandVars(input string, mapping func(string) string) string {
	var buf strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != expansionOperator || cursor+1 >= len(input) {
			continue
		}
		buf.WriteString(input[checkpoint:cursor])
		rest := input[cursor+1:]
		advance := 1
		switch rest[0] {
		case expansionOperator:
			buf.WriteByte(expansionOperator)
		case referenceOpener:
			if end := strings.IndexByte(rest, referenceCloser); end >= 0 {
				buf.WriteString(mapping(rest[1:end]))
				advance = end + 1
			} else {
				// An unterminated reference: keep "$(" and go on scanning
				// after it, as the kubelet does.
				buf.WriteString("$(")
			}
		default:
			buf.WriteByte(expansionOperator)
			buf.WriteByte(rest[0])
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return buf.String() + input[checkpoint:]
}

// mappingFuncFor resolves a name from the first context that defines it and
// leaves an undefined reference as written ("$(NAME)"), as the kubelet's
// expansion.MappingFuncFor does.
func mappingFuncFor(contexts ...map[string]string) func(string) string {
	return func(name string) string {
		for _, vars := range contexts {
			if v, ok := vars[name]; ok {
				return v
			}
		}
		return string(expansionOperator) + string(referenceOpener) + name + string(referenceCloser)
	}
}

func envVarsToMap(envs []EnvVar) map[string]string {
	m := make(map[string]string, len(envs))
	for _, e := range envs {
		m[e.Name] = e.Value
	}
	return m
}

// ExpandContainerCommandAndArgs expands $(VAR) references in the container's
// command and args against its resolved environment. Matches the kubelet's
// kubecontainer.ExpandContainerCommandAndArgs.
func ExpandContainerCommandAndArgs(c *v1.Container, envs []EnvVar) (command, args []string) {
	mapping := mappingFuncFor(envVarsToMap(envs))
	for _, s := range c.Command {
		command = append(command, expandVars(s, mapping))
	}
	for _, s := range c.Args {
		args = append(args, expandVars(s, mapping))
	}
	return command, args
}

// ExpandContainerCommandOnlyStatic expands $(VAR) references in a command
// (an exec probe's or hook's) against the container's env entries that have
// a literal value only; valueFrom entries stay unexpanded. Matches the
// kubelet's kubecontainer.ExpandContainerCommandOnlyStatic.
func ExpandContainerCommandOnlyStatic(containerCommand []string, envs []v1.EnvVar) []string {
	static := make(map[string]string, len(envs))
	for _, e := range envs {
		if e.Value != "" {
			static[e.Name] = e.Value
		}
	}
	mapping := mappingFuncFor(static)
	var command []string
	for _, s := range containerCommand {
		command = append(command, expandVars(s, mapping))
	}
	return command
}

// expandSubPathExpr expands a volume mount's subPathExpr against the
// container's environment; a reference to an undefined or empty variable is
// an error. Matches the kubelet's kubecontainer.ExpandContainerVolumeMounts.
func expandSubPathExpr(expr string, envs []EnvVar) (string, error) {
	env := envVarsToMap(envs)
	missing := map[string]struct{}{}
	expanded := expandVars(expr, func(name string) string {
		v, ok := env[name]
		if !ok || v == "" {
			missing[name] = struct{}{}
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%w: missing value for %s", errdefs.ErrInvalidArgument,
			strings.Join(slices.Sorted(maps.Keys(missing)), ", "))
	}
	return expanded, nil
}

// EnvOptions is what makeEnvironmentVariables needs beyond the pod: facts
// about the node.
type EnvOptions struct {
	// HostIPs are the node's IPs, primary first, for status.hostIP(s).
	HostIPs []string
	// NodeAllocatable stands in for unset cpu, memory and ephemeral-storage
	// limits in resourceFieldRef values, as the kubelet's
	// defaultPodLimitsForDownwardAPI does.
	NodeAllocatable v1.ResourceList
}

// makeEnvironmentVariables resolves the container's environment. It matches
// the kubelet's makeEnvironmentVariables for everything that needs no API
// object:
//   - a literal value is expanded against the variables declared before it
//     (a reference to a later or unknown one stays as written);
//   - valueFrom.fieldRef and valueFrom.resourceFieldRef are resolved from the
//     pod, podIPs and opts, and not expanded;
//   - a later entry with the same name replaces the earlier value.
//
// splitlet has no ConfigMaps or Secrets yet, so envFrom entries and
// valueFrom.configMapKeyRef / secretKeyRef (and fileKeyRef, an alpha feature)
// fail with errdefs.ErrNotImplemented naming the field, unless marked
// optional: then they are skipped, which is what the kubelet does with an
// optional source that does not exist.
//
// Differences from the kubelet, on purpose: no Service environment variables
// (no API server, so no Services; enableServiceLinks is ignored), and the
// result is in declaration order, where the kubelet's follows Go map
// iteration. The kubelet's own comment says the environment is created "in
// the order variables are declared"; a stable order also keeps the
// container's config identical from one start to the next.
func makeEnvironmentVariables(pod *v1.Pod, c *v1.Container, podIPs []string, opts EnvOptions) ([]EnvVar, error) {
	field := containerFieldPath(pod, c.Name)
	for i, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			if from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
				continue
			}
			return nil, fmt.Errorf("%w: %s.envFrom[%d].configMapRef (%q): ConfigMaps are not supported by splitlet",
				errdefs.ErrNotImplemented, field, i, from.ConfigMapRef.Name)
		case from.SecretRef != nil:
			if from.SecretRef.Optional != nil && *from.SecretRef.Optional {
				continue
			}
			return nil, fmt.Errorf("%w: %s.envFrom[%d].secretRef (%q): Secrets are not supported by splitlet",
				errdefs.ErrNotImplemented, field, i, from.SecretRef.Name)
		}
	}

	values := make(map[string]string, len(c.Env))
	order := make([]string, 0, len(c.Env))
	mapping := mappingFuncFor(values)
	for i, env := range c.Env {
		envField := fmt.Sprintf("%s.env[%d]", field, i)
		value := env.Value
		switch {
		case value != "":
			value = expandVars(value, mapping)
		case env.ValueFrom == nil:
		case env.ValueFrom.FieldRef != nil:
			v, err := podFieldSelectorRuntimeValue(env.ValueFrom.FieldRef, pod, podIPs, opts.HostIPs)
			if err != nil {
				return nil, fmt.Errorf("%s.valueFrom.fieldRef: %w", envField, err)
			}
			value = v
		case env.ValueFrom.ResourceFieldRef != nil:
			v, err := containerResourceRuntimeValue(env.ValueFrom.ResourceFieldRef, pod, c, opts.NodeAllocatable)
			if err != nil {
				return nil, fmt.Errorf("%s.valueFrom.resourceFieldRef: %w", envField, err)
			}
			value = v
		case env.ValueFrom.ConfigMapKeyRef != nil:
			ref := env.ValueFrom.ConfigMapKeyRef
			if ref.Optional != nil && *ref.Optional {
				continue
			}
			return nil, fmt.Errorf("%w: %s.valueFrom.configMapKeyRef (%q, key %q): ConfigMaps are not supported by splitlet",
				errdefs.ErrNotImplemented, envField, ref.Name, ref.Key)
		case env.ValueFrom.SecretKeyRef != nil:
			ref := env.ValueFrom.SecretKeyRef
			if ref.Optional != nil && *ref.Optional {
				continue
			}
			return nil, fmt.Errorf("%w: %s.valueFrom.secretKeyRef (%q, key %q): Secrets are not supported by splitlet",
				errdefs.ErrNotImplemented, envField, ref.Name, ref.Key)
		case env.ValueFrom.FileKeyRef != nil:
			ref := env.ValueFrom.FileKeyRef
			if ref.Optional != nil && *ref.Optional {
				continue
			}
			return nil, fmt.Errorf("%w: %s.valueFrom.fileKeyRef (volume %q, key %q): env files are not supported by splitlet",
				errdefs.ErrNotImplemented, envField, ref.VolumeName, ref.Key)
		}
		if _, seen := values[env.Name]; !seen {
			order = append(order, env.Name)
		}
		values[env.Name] = value
	}

	result := make([]EnvVar, 0, len(order))
	for _, name := range order {
		result = append(result, EnvVar{Name: name, Value: values[name]})
	}
	return result, nil
}

// containerFieldPath names the container's entry in the pod spec for error
// messages, e.g. "spec.initContainers[1]".
func containerFieldPath(pod *v1.Pod, name string) string {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return fmt.Sprintf("spec.initContainers[%d]", i)
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return fmt.Sprintf("spec.containers[%d]", i)
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return fmt.Sprintf("spec.ephemeralContainers[%d]", i)
		}
	}
	return fmt.Sprintf("container %q", name)
}

// podFieldSelectorRuntimeValue resolves a downward API field reference.
// Matches the kubelet's podFieldSelectorRuntimeValue with
// ConvertDownwardAPIFieldLabel and fieldpath.ExtractFieldPathAsString: the
// field paths the API allows in env (metadata.name, metadata.namespace,
// metadata.uid, metadata.labels['k'], metadata.annotations['k'],
// spec.nodeName, spec.serviceAccountName, status.hostIP, status.hostIPs,
// status.podIP, status.podIPs) plus whole metadata.labels/annotations maps.
// The pod IP is podIPs[0]. An empty apiVersion is read as v1, the value
// defaulting would have set.
func podFieldSelectorRuntimeValue(fs *v1.ObjectFieldSelector, pod *v1.Pod, podIPs, hostIPs []string) (string, error) {
	if fs.APIVersion != "" && fs.APIVersion != "v1" {
		return "", fmt.Errorf("%w: unsupported pod version: %s", errdefs.ErrInvalidArgument, fs.APIVersion)
	}
	path := fs.FieldPath
	if base, subscript, ok := splitSubscriptedPath(path); ok {
		var m map[string]string
		switch base {
		case "metadata.annotations":
			m = pod.Annotations
		case "metadata.labels":
			m = pod.Labels
		default:
			return "", fmt.Errorf("%w: field label does not support subscript: %s", errdefs.ErrInvalidArgument, path)
		}
		if errs := validation.IsQualifiedName(strings.ToLower(subscript)); len(errs) != 0 {
			return "", fmt.Errorf("%w: invalid key subscript in %s: %s", errdefs.ErrInvalidArgument, path, strings.Join(errs, ";"))
		}
		return m[subscript], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName", "spec.host":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP":
		if len(hostIPs) == 0 {
			return "", fmt.Errorf("%w: status.hostIP: the node's IPs are not known", errdefs.ErrFailedPrecondition)
		}
		return hostIPs[0], nil
	case "status.hostIPs":
		if len(hostIPs) == 0 {
			return "", fmt.Errorf("%w: status.hostIPs: the node's IPs are not known", errdefs.ErrFailedPrecondition)
		}
		return strings.Join(hostIPs, ","), nil
	case "status.podIP":
		if len(podIPs) == 0 {
			return "", nil
		}
		return podIPs[0], nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	}
	return "", fmt.Errorf("%w: field label not supported: %s", errdefs.ErrInvalidArgument, path)
}

// splitSubscriptedPath splits "metadata.labels['k']" into its base and key.
// Matches the kubelet's fieldpath.SplitMaybeSubscriptedPath.
func splitSubscriptedPath(path string) (base, subscript string, ok bool) {
	if !strings.HasSuffix(path, "']") {
		return path, "", false
	}
	s := strings.TrimSuffix(path, "']")
	parts := strings.SplitN(s, "['", 2)
	if len(parts) < 2 || len(parts[0]) == 0 {
		return path, "", false
	}
	return parts[0], parts[1], true
}

// formatMap renders a map as sorted key="value" lines, as the kubelet's
// fieldpath.FormatMap does for a whole labels or annotations reference.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%v=%q", k, m[k])
	}
	return b.String()
}

// containerResourceRuntimeValue resolves a resourceFieldRef. The container
// is the one named by the selector, or c when none is named; its unset (or
// zero) cpu, memory and ephemeral-storage limits read as the node's
// allocatable amount. Matches the kubelet's containerResourceRuntimeValue
// after defaultPodLimitsForDownwardAPI, with resource.ExtractContainerResourceValue:
// the value is divided by the divisor (1 when unset) and rounded up.
func containerResourceRuntimeValue(fs *v1.ResourceFieldSelector, pod *v1.Pod, c *v1.Container, allocatable v1.ResourceList) (string, error) {
	target := c
	if fs.ContainerName != "" {
		target = findContainer(pod, fs.ContainerName)
		if target == nil {
			return "", fmt.Errorf("%w: container %s not found", errdefs.ErrInvalidArgument, fs.ContainerName)
		}
	}
	limits := defaultLimits(target.Resources.Limits, allocatable)
	requests := target.Resources.Requests

	divisor := fs.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(fs.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("%w: unsupported container resource: %v", errdefs.ErrInvalidArgument, fs.Resource)
	}
	list := requests
	if kind == "limits" {
		list = limits
	}
	q := list[v1.ResourceName(name)]
	switch {
	case name == string(v1.ResourceCPU):
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case name == string(v1.ResourceMemory), name == string(v1.ResourceEphemeralStorage),
		strings.HasPrefix(name, v1.ResourceHugePagesPrefix):
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("%w: unsupported container resource: %v", errdefs.ErrInvalidArgument, fs.Resource)
}

// defaultLimits returns limits with the node's allocatable amount standing
// in for an unset or zero cpu, memory or ephemeral-storage limit. Matches the
// kubelet's resource.MergeContainerResourceLimits (hugepages are never
// defaulted: they are never overcommitted).
func defaultLimits(limits, allocatable v1.ResourceList) v1.ResourceList {
	out := limits.DeepCopy()
	if out == nil {
		out = v1.ResourceList{}
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage} {
		if q, ok := out[name]; ok && !q.IsZero() {
			continue
		}
		if a, ok := allocatable[name]; ok {
			out[name] = a.DeepCopy()
		}
	}
	return out
}

// findContainer returns the regular or init container of that name.
func findContainer(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}
