package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/events"
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

// ObjectGetter reads the API objects a pod's containers refer to: the
// ConfigMaps and Secrets of env, envFrom and volumes, the Services whose
// variables the kubelet injects, and service account tokens. It is the
// kubelet's configMapManager, secretManager, serviceLister and
// tokenManager in one; sync implements
// it over the API server (apiserver.Objects).
type ObjectGetter interface {
	// GetConfigMap returns the ConfigMap namespace/name. When it does not
	// exist the error matches errdefs.ErrNotFound (an optional reference is
	// then skipped) and reads as the kubelet's (`configmap "x" not found`);
	// any other error means it could not be read now, and the container
	// waits for a later sync.
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	// GetSecret is GetConfigMap for Secrets.
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	// ListServices returns the Services of the namespace. Before the
	// Services were read once the error matches errdefs.ErrUnavailable.
	ListServices(ctx context.Context, namespace string) ([]*v1.Service, error)
	// GetServiceAccountToken returns a token of the service account
	// namespace/name for req (audiences, expiry, bound object): from a
	// cache while younger than 80% of its lifetime, else a new one through
	// the TokenRequest API, as the kubelet's token manager. Errors are the
	// API server's.
	GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// allocatable is NodeAllocatable's answer, nil without one.
func (o EnvOptions) allocatable() v1.ResourceList {
	if o.NodeAllocatable == nil {
		return nil
	}
	return o.NodeAllocatable()
}

// EnvOptions is what makeEnvironmentVariables needs beyond the pod: facts
// about the node, and the API server's objects.
type EnvOptions struct {
	// HostIPs are the node's IPs, primary first, for status.hostIP(s).
	HostIPs []string
	// NodeAllocatable returns the node's allocatable resources, which
	// stand in for unset cpu, memory and ephemeral-storage limits in
	// resourceFieldRef values, as the kubelet's
	// defaultPodLimitsForDownwardAPI does with its node's; nil stands in
	// nothing.
	NodeAllocatable func() v1.ResourceList
	// Objects reads ConfigMaps, Secrets and Services; nil when sync runs
	// without an API server: then references to ConfigMaps and Secrets
	// fail naming the field, and no Service variables are set.
	Objects ObjectGetter

	// recorder gets the InvalidEnvironmentVariableNames event; SyncPod sets
	// it to the manager's.
	recorder events.EventRecorder
}

// apiserverSource is the config source name of pods from the API server
// (apiserver.SourceName); every other source's pods are static pods, as in
// the kubelet's kubetypes.IsStaticPod.
const apiserverSource = "apiserver"

// makeEnvironmentVariables resolves the container's environment. It matches
// the kubelet's makeEnvironmentVariables:
//   - envFrom entries come first, in order, each ConfigMap's or Secret's
//     data keys (with the prefix) setting a variable; a missing optional
//     source is skipped;
//   - then env entries: a literal value is expanded against the variables
//     set so far and the Service variables (a reference to a later or
//     unknown one stays as written); valueFrom.fieldRef and resourceFieldRef
//     are resolved from the pod, podIPs and opts; configMapKeyRef and
//     secretKeyRef read the object's key, skipped when the object or key is
//     missing and the reference optional; fileKeyRef reads the key from
//     an env file in an emptyDir volume (fileKeyRefValue);
//   - a later entry with the same name replaces the earlier value;
//   - last, the Service variables (getServiceEnvVarMap) not set otherwise.
//
// Without an API server (opts.Objects nil), ConfigMap and Secret references
// fail with errdefs.ErrNotImplemented naming the field, unless marked
// optional: then they are skipped. valueFrom.fileKeyRef reads a key from an
// env file in one of podVolumes (fileKeyRefValue), which needs no API server.
//
// Differences from the kubelet, on purpose: the result is in declaration
// order (data keys sorted within one envFrom source, Service variables
// sorted, at the end), where the kubelet's follows Go map iteration. The
// kubelet's own comment says the environment is created "in the order
// variables are declared"; a stable order also keeps the container's config
// identical from one start to the next. A key that cannot be a variable
// name at all (empty, or containing '=') is skipped and reported in an
// InvalidEnvironmentVariableNames event, as kubelets before
// RelaxedEnvironmentVariableValidation did for every invalid name; the API
// server's validation already keeps such keys out.
//
// It is longer than 120 lines on purpose: it stays one function in the
// order of the kubelet's makeEnvironmentVariables, so that the two read side by side and a
// change upstream maps to one place here.
func makeEnvironmentVariables(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string, podVolumes map[string]string, opts EnvOptions) ([]EnvVar, error) {
	field := containerFieldPath(pod, c.Name)
	serviceEnv, err := getServiceEnvVarMap(ctx, pod, opts.Objects)
	if err != nil {
		return nil, err
	}

	values := make(map[string]string, len(c.Env))
	order := make([]string, 0, len(c.Env))
	set := func(name, value string) {
		if _, seen := values[name]; !seen {
			order = append(order, name)
		}
		values[name] = value
	}
	objs := &podObjects{pod: pod, getter: opts.Objects}

	for i, from := range c.EnvFrom {
		fromField := fmt.Sprintf("%s.envFrom[%d]", field, i)
		var (
			data       map[string]string
			kind, name string
		)
		switch {
		case from.ConfigMapRef != nil:
			kind, name = "configMap", from.ConfigMapRef.Name
			cm, skip, err := objs.configMap(ctx, from.ConfigMapRef.Name, from.ConfigMapRef.Optional, fromField+".configMapRef")
			if err != nil {
				return nil, err
			}
			if skip {
				continue
			}
			data = cm.Data
		case from.SecretRef != nil:
			kind, name = "secret", from.SecretRef.Name
			s, skip, err := objs.secret(ctx, from.SecretRef.Name, from.SecretRef.Optional, fromField+".secretRef")
			if err != nil {
				return nil, err
			}
			if skip {
				continue
			}
			data = make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
		default:
			continue
		}
		var invalid []string
		for _, k := range slices.Sorted(maps.Keys(data)) {
			name := from.Prefix + k
			if len(validation.IsRelaxedEnvVarName(name)) != 0 {
				invalid = append(invalid, name)
				continue
			}
			set(name, data[k])
		}
		if len(invalid) > 0 && opts.recorder != nil {
			opts.recorder.Eventf(pod, v1.EventTypeWarning, events.InvalidEnvironmentVariableNames,
				"Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
				strings.Join(invalid, ", "), kind, pod.Namespace, name)
		}
	}

	mapping := mappingFuncFor(values, serviceEnv)
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
			v, err := containerResourceRuntimeValue(env.ValueFrom.ResourceFieldRef, pod, c, opts.allocatable())
			if err != nil {
				return nil, fmt.Errorf("%s.valueFrom.resourceFieldRef: %w", envField, err)
			}
			value = v
		case env.ValueFrom.ConfigMapKeyRef != nil:
			ref := env.ValueFrom.ConfigMapKeyRef
			cm, skip, err := objs.configMap(ctx, ref.Name, ref.Optional, envField+".valueFrom.configMapKeyRef")
			if err != nil {
				return nil, err
			}
			if skip {
				continue
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				if isOptional(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("%w: couldn't find key %v in ConfigMap %v/%v", errdefs.ErrNotFound, ref.Key, pod.Namespace, ref.Name)
			}
			value = v
		case env.ValueFrom.SecretKeyRef != nil:
			ref := env.ValueFrom.SecretKeyRef
			s, skip, err := objs.secret(ctx, ref.Name, ref.Optional, envField+".valueFrom.secretKeyRef")
			if err != nil {
				return nil, err
			}
			if skip {
				continue
			}
			v, ok := s.Data[ref.Key]
			if !ok {
				if isOptional(ref.Optional) {
					continue
				}
				return nil, fmt.Errorf("%w: couldn't find key %v in Secret %v/%v", errdefs.ErrNotFound, ref.Key, pod.Namespace, ref.Name)
			}
			value = string(v)
		case env.ValueFrom.FileKeyRef != nil:
			v, skip, err := fileKeyRefValue(env.ValueFrom.FileKeyRef, podVolumes)
			if err != nil {
				return nil, fmt.Errorf("%s.valueFrom.fileKeyRef (%s): %w", envField, env.Name, err)
			}
			if skip {
				continue
			}
			value = v
		}
		set(env.Name, value)
	}

	result := make([]EnvVar, 0, len(order)+len(serviceEnv))
	for _, name := range order {
		result = append(result, EnvVar{Name: name, Value: values[name]})
	}
	for _, name := range slices.Sorted(maps.Keys(serviceEnv)) {
		if _, present := values[name]; !present {
			result = append(result, EnvVar{Name: name, Value: serviceEnv[name]})
		}
	}
	return result, nil
}

func isOptional(b *bool) bool { return b != nil && *b }

// podObjects reads the ConfigMaps and Secrets of one pod's namespace once
// per container, as the kubelet's makeEnvironmentVariables keeps them in
// its configMaps and secrets maps.
type podObjects struct {
	pod        *v1.Pod
	getter     ObjectGetter
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
}

// configMap returns the named ConfigMap, or skip when it is missing and
// optional (or, without an API server, optional at all). field names the
// reference for the error without an API server.
func (o *podObjects) configMap(ctx context.Context, name string, optional *bool, field string) (_ *v1.ConfigMap, skip bool, _ error) {
	if cm, ok := o.configMaps[name]; ok {
		return cm, false, nil
	}
	if o.getter == nil {
		if isOptional(optional) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("%w: %s (%q): ConfigMaps need an API server (--kubeconfig)", errdefs.ErrNotImplemented, field, name)
	}
	cm, err := o.getter.GetConfigMap(ctx, o.pod.Namespace, name)
	if err != nil {
		if errors.Is(err, errdefs.ErrNotFound) && isOptional(optional) {
			return nil, true, nil
		}
		return nil, false, err
	}
	if o.configMaps == nil {
		o.configMaps = map[string]*v1.ConfigMap{}
	}
	o.configMaps[name] = cm
	return cm, false, nil
}

// secret is configMap for Secrets.
func (o *podObjects) secret(ctx context.Context, name string, optional *bool, field string) (_ *v1.Secret, skip bool, _ error) {
	if s, ok := o.secrets[name]; ok {
		return s, false, nil
	}
	if o.getter == nil {
		if isOptional(optional) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("%w: %s (%q): Secrets need an API server (--kubeconfig)", errdefs.ErrNotImplemented, field, name)
	}
	s, err := o.getter.GetSecret(ctx, o.pod.Namespace, name)
	if err != nil {
		if errors.Is(err, errdefs.ErrNotFound) && isOptional(optional) {
			return nil, true, nil
		}
		return nil, false, err
	}
	if o.secrets == nil {
		o.secrets = map[string]*v1.Secret{}
	}
	o.secrets[name] = s
	return s, false, nil
}

// masterServiceNamespace holds the API server's own Service, "kubernetes",
// whose variables every pod gets.
const (
	masterServiceNamespace = metav1.NamespaceDefault
	masterServiceName      = "kubernetes"
)

// getServiceEnvVarMap returns the Service variables of the pod: those of
// the "kubernetes" Service in "default" always, and those of the Services
// of the pod's namespace under enableServiceLinks (unset reads as true, the
// API default). Matches the kubelet's getServiceEnvVarMap with the
// serviceHasSynced check of makeEnvironmentVariables: a pod from the API
// server waits until the Services were read once, a static pod does not.
// Without an API server there are none.
func getServiceEnvVarMap(ctx context.Context, pod *v1.Pod, getter ObjectGetter) (map[string]string, error) {
	m := map[string]string{}
	if getter == nil {
		return m, nil
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	static := pod.Annotations[defaults.ConfigSourceAnnotationKey] != apiserverSource
	list := func(ns string) ([]*v1.Service, error) {
		svcs, err := getter.ListServices(ctx, ns)
		if err != nil {
			if static && errors.Is(err, errdefs.ErrUnavailable) {
				return nil, nil
			}
			return nil, fmt.Errorf("services have not yet been read at least once, cannot construct envvars: %w", err)
		}
		return svcs, nil
	}
	serviceMap := map[string]*v1.Service{}
	masters, err := list(masterServiceNamespace)
	if err != nil {
		return nil, err
	}
	for _, svc := range masters {
		if svc.Name == masterServiceName && isServiceIPSet(svc) {
			serviceMap[svc.Name] = svc
		}
	}
	if links {
		svcs := masters
		if pod.Namespace != masterServiceNamespace {
			if svcs, err = list(pod.Namespace); err != nil {
				return nil, err
			}
		}
		for _, svc := range svcs {
			// A namesake of the master service in the pod's namespace
			// replaces it, as in the kubelet.
			if isServiceIPSet(svc) {
				serviceMap[svc.Name] = svc
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(serviceMap)) {
		for _, e := range envVarsFromService(serviceMap[name]) {
			m[e.Name] = e.Value
		}
	}
	return m, nil
}

// isServiceIPSet matches the kubelet's v1helper.IsServiceIPSet: headless
// and IP-less Services have no variables.
func isServiceIPSet(svc *v1.Service) bool {
	return svc.Spec.ClusterIP != v1.ClusterIPNone && svc.Spec.ClusterIP != ""
}

// envVarsFromService returns a Service's variables, matching the kubelet's
// envvars.FromServices with makeLinkVariables: NAME_SERVICE_HOST,
// NAME_SERVICE_PORT, NAME_SERVICE_PORT_<PORTNAME> per named port, and the
// Docker link variables NAME_PORT and NAME_PORT_<n>_<PROTO>[_PROTO|_PORT|_ADDR].
func envVarsFromService(svc *v1.Service) []EnvVar {
	if !isServiceIPSet(svc) || len(svc.Spec.Ports) == 0 {
		return nil
	}
	prefix := makeEnvVariableName(svc.Name)
	ip := svc.Spec.ClusterIP
	port := prefix + "_SERVICE_PORT"
	result := []EnvVar{
		{Name: prefix + "_SERVICE_HOST", Value: ip},
		{Name: port, Value: strconv.Itoa(int(svc.Spec.Ports[0].Port))},
	}
	for i := range svc.Spec.Ports {
		if sp := &svc.Spec.Ports[i]; sp.Name != "" {
			result = append(result, EnvVar{Name: port + "_" + makeEnvVariableName(sp.Name), Value: strconv.Itoa(int(sp.Port))})
		}
	}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		protocol := string(v1.ProtocolTCP)
		if sp.Protocol != "" {
			protocol = string(sp.Protocol)
		}
		url := strings.ToLower(protocol) + "://" + net.JoinHostPort(ip, strconv.Itoa(int(sp.Port)))
		if i == 0 {
			result = append(result, EnvVar{Name: prefix + "_PORT", Value: url})
		}
		portPrefix := fmt.Sprintf("%s_PORT_%d_%s", prefix, sp.Port, strings.ToUpper(protocol))
		result = append(result,
			EnvVar{Name: portPrefix, Value: url},
			EnvVar{Name: portPrefix + "_PROTO", Value: strings.ToLower(protocol)},
			EnvVar{Name: portPrefix + "_PORT", Value: strconv.Itoa(int(sp.Port))},
			EnvVar{Name: portPrefix + "_ADDR", Value: ip},
		)
	}
	return result
}

// makeEnvVariableName matches the kubelet's envvars.makeEnvVariableName.
func makeEnvVariableName(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, "-", "_"))
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
