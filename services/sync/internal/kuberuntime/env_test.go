package kuberuntime

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestExpandVars(t *testing.T) {
	vars := map[string]string{"VAR": "value", "EMPTY": "", "NESTED": "$(VAR)"}
	cases := []struct {
		desc  string
		input string
		want  string
	}{
		{desc: "plain text untouched", input: "echo hello", want: "echo hello"},
		{desc: "whole reference", input: "$(VAR)", want: "value"},
		{desc: "reference inside text", input: "a-$(VAR)-b", want: "a-value-b"},
		{desc: "two references", input: "$(VAR)$(VAR)", want: "valuevalue"},
		{desc: "escaped reference stays literal", input: "$$(VAR)", want: "$(VAR)"},
		{desc: "escaped operator alone", input: "cost: $$5", want: "cost: $5"},
		{desc: "double escape then reference", input: "$$$(VAR)", want: "$value"},
		{desc: "undefined reference left as is", input: "x $(UNDEFINED) y", want: "x $(UNDEFINED) y"},
		{desc: "defined but empty", input: "[$(EMPTY)]", want: "[]"},
		{desc: "unterminated reference kept", input: "$(VAR", want: "$(VAR"},
		{desc: "name runs to the first closer", input: "$($(VAR)", want: "$($(VAR)"},
		{desc: "opener at the end", input: "x$(", want: "x$("},
		{desc: "operator before other char", input: "$VAR and $1", want: "$VAR and $1"},
		{desc: "trailing operator", input: "price$", want: "price$"},
		{desc: "empty name", input: "$()", want: "$()"},
		{desc: "value is not expanded again", input: "$(NESTED)", want: "$(VAR)"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := expandVars(tc.input, mappingFuncFor(vars)); got != tc.want {
				t.Errorf("expandVars(%q) = %q, want %q", tc.input, got, tc.want)
			}
		})
	}
}

func TestExpandContainerCommandAndArgs(t *testing.T) {
	c := &v1.Container{
		Command: []string{"/bin/sh", "-c", "echo $(GREETING) $$(GREETING)"},
		Args:    []string{"$(TARGET)", "$(MISSING)"},
	}
	cmd, args := ExpandContainerCommandAndArgs(c, []EnvVar{{Name: "GREETING", Value: "hi"}, {Name: "TARGET", Value: "world"}})
	if want := []string{"/bin/sh", "-c", "echo hi $(GREETING)"}; !reflect.DeepEqual(cmd, want) {
		t.Errorf("command = %q, want %q", cmd, want)
	}
	if want := []string{"world", "$(MISSING)"}; !reflect.DeepEqual(args, want) {
		t.Errorf("args = %q, want %q", args, want)
	}
	if cmd, args := ExpandContainerCommandAndArgs(&v1.Container{}, nil); cmd != nil || args != nil {
		t.Errorf("empty container: command %q args %q, want nil", cmd, args)
	}
}

func TestExpandContainerCommandOnlyStatic(t *testing.T) {
	envs := []v1.EnvVar{
		{Name: "STATIC", Value: "s"},
		{Name: "FROM_FIELD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}
	got := ExpandContainerCommandOnlyStatic([]string{"$(STATIC)", "$(FROM_FIELD)"}, envs)
	if want := []string{"s", "$(FROM_FIELD)"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestExpandSubPathExpr(t *testing.T) {
	envs := []EnvVar{{Name: "POD", Value: "web"}, {Name: "EMPTY", Value: ""}}
	cases := []struct {
		desc    string
		expr    string
		want    string
		wantErr string
	}{
		{desc: "expands", expr: "logs/$(POD)", want: "logs/web"},
		{desc: "undefined is an error", expr: "$(NOPE)/x", wantErr: "NOPE"},
		{desc: "empty is an error", expr: "$(EMPTY)", wantErr: "EMPTY"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := expandSubPathExpr(tc.expr, envs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("err = %v, want invalid argument naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func fieldEnv(name, path string) v1.EnvVar {
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}}
}

func resourceEnv(name, container, res, divisor string) v1.EnvVar {
	sel := &v1.ResourceFieldSelector{ContainerName: container, Resource: res}
	if divisor != "" {
		sel.Divisor = resource.MustParse(divisor)
	}
	return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{ResourceFieldRef: sel}}
}

func envPod() *v1.Pod {
	pod := makeTestPod()
	pod.Labels = map[string]string{"app": "web", "tier": "front"}
	pod.Annotations = map[string]string{"owner": "team-a"}
	pod.Spec.NodeName = "node-1"
	pod.Spec.ServiceAccountName = "sa"
	pod.Spec.Containers[1].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m")},
	}
	return pod
}

func TestMakeEnvironmentVariables(t *testing.T) {
	allocatable := v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("4"),
		v1.ResourceMemory:           resource.MustParse("8Gi"),
		v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	opts := EnvOptions{HostIPs: []string{"192.168.1.10", "fd00::10"}, NodeAllocatable: func() v1.ResourceList { return allocatable }}
	podIPs := []string{"10.88.0.7", "fd00:88::7"}
	cases := []struct {
		desc string
		env  []v1.EnvVar
		want []EnvVar
	}{
		{
			desc: "literal values in declaration order, later refs to earlier",
			env: []v1.EnvVar{
				{Name: "Z", Value: "last-letter"},
				{Name: "A", Value: "$(Z)-a"},
				{Name: "B", Value: "$(C)"}, // C is declared after B: left as is
				{Name: "C", Value: "c"},
				{Name: "D", Value: "$$(A)"},
			},
			want: []EnvVar{{"Z", "last-letter"}, {"A", "last-letter-a"}, {"B", "$(C)"}, {"C", "c"}, {"D", "$(A)"}},
		},
		{
			desc: "redefinition keeps first position, last value",
			env:  []v1.EnvVar{{Name: "X", Value: "1"}, {Name: "Y", Value: "$(X)"}, {Name: "X", Value: "2"}},
			want: []EnvVar{{"X", "2"}, {"Y", "1"}},
		},
		{
			desc: "empty value without source is set empty",
			env:  []v1.EnvVar{{Name: "E"}},
			want: []EnvVar{{"E", ""}},
		},
		{
			desc: "fieldRef values",
			env: []v1.EnvVar{
				fieldEnv("NAME", "metadata.name"),
				fieldEnv("NS", "metadata.namespace"),
				fieldEnv("UID", "metadata.uid"),
				fieldEnv("APP", "metadata.labels['app']"),
				fieldEnv("OWNER", "metadata.annotations['owner']"),
				fieldEnv("ABSENT", "metadata.labels['absent']"),
				fieldEnv("LABELS", "metadata.labels"),
				fieldEnv("NODE", "spec.nodeName"),
				fieldEnv("SA", "spec.serviceAccountName"),
				fieldEnv("HOST_IP", "status.hostIP"),
				fieldEnv("HOST_IPS", "status.hostIPs"),
				fieldEnv("POD_IP", "status.podIP"),
				fieldEnv("POD_IPS", "status.podIPs"),
				{Name: "NOT_EXPANDED", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['owner']"}}},
			},
			want: []EnvVar{
				{"NAME", "web"}, {"NS", "default"}, {"UID", "uid-1"}, {"APP", "web"}, {"OWNER", "team-a"},
				{"ABSENT", ""}, {"LABELS", "app=\"web\"\ntier=\"front\""}, {"NODE", "node-1"}, {"SA", "sa"},
				{"HOST_IP", "192.168.1.10"}, {"HOST_IPS", "192.168.1.10,fd00::10"},
				{"POD_IP", "10.88.0.7"}, {"POD_IPS", "10.88.0.7,fd00:88::7"}, {"NOT_EXPANDED", "team-a"},
			},
		},
		{
			desc: "a literal may reference a fieldRef declared before it",
			env:  []v1.EnvVar{fieldEnv("NAME", "metadata.name"), {Name: "GREETING", Value: "hello $(NAME)"}},
			want: []EnvVar{{"NAME", "web"}, {"GREETING", "hello web"}},
		},
		{
			desc: "resourceFieldRef with divisors and allocatable fallback",
			env: []v1.EnvVar{
				resourceEnv("CPU_REQ_MILLI", "", "requests.cpu", "1m"),
				resourceEnv("CPU_REQ", "", "requests.cpu", ""), // 250m rounds up to 1
				resourceEnv("CPU_LIM", "", "limits.cpu", ""),   // 1500m rounds up to 2
				resourceEnv("MEM_REQ_MI", "", "requests.memory", "1Mi"),
				resourceEnv("MEM_LIM", "", "limits.memory", "1Gi"), // unset: 8Gi allocatable
				resourceEnv("EPH_LIM", "", "limits.ephemeral-storage", "1Gi"),
				resourceEnv("EPH_REQ", "", "requests.ephemeral-storage", ""),
				resourceEnv("OTHER_CPU_LIM", "foo1", "limits.cpu", "1m"), // foo1 has none: 4 cpus
			},
			want: []EnvVar{
				{"CPU_REQ_MILLI", "250"}, {"CPU_REQ", "1"}, {"CPU_LIM", "2"}, {"MEM_REQ_MI", "64"},
				{"MEM_LIM", "8"}, {"EPH_LIM", "100"}, {"EPH_REQ", "0"}, {"OTHER_CPU_LIM", "4000"},
			},
		},
		{
			desc: "optional unsupported sources are skipped",
			env: []v1.EnvVar{
				{Name: "CM", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
					LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "k", Optional: new(true)}}},
				{Name: "SECRET", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
					LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "k", Optional: new(true)}}},
				{Name: "KEPT", Value: "yes"},
			},
			want: []EnvVar{{"KEPT", "yes"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := envPod()
			c := &pod.Spec.Containers[1]
			c.Env = tc.env
			got, err := makeEnvironmentVariables(t.Context(), pod, c, podIPs, nil, opts)
			if err != nil {
				t.Fatalf("makeEnvironmentVariables: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestMakeEnvironmentVariablesRejects(t *testing.T) {
	cases := []struct {
		desc      string
		env       []v1.EnvVar
		envFrom   []v1.EnvFromSource
		hostIPs   []string
		wantIs    error
		wantField string
	}{
		{
			desc: "configMapKeyRef",
			env: []v1.EnvVar{{Name: "A", Value: "a"}, {Name: "CM", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "cm"}, Key: "k"}}}},
			wantIs: errdefs.ErrNotImplemented, wantField: "spec.containers[1].env[1].valueFrom.configMapKeyRef",
		},
		{
			desc: "secretKeyRef not optional",
			env: []v1.EnvVar{{Name: "S", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "k", Optional: new(false)}}}},
			wantIs: errdefs.ErrNotImplemented, wantField: "spec.containers[1].env[0].valueFrom.secretKeyRef",
		},
		{
			desc:    "envFrom configMapRef",
			envFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}},
			wantIs:  errdefs.ErrNotImplemented, wantField: "spec.containers[1].envFrom[0].configMapRef",
		},
		{
			desc: "envFrom secretRef after an optional one",
			envFrom: []v1.EnvFromSource{
				{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "a"}, Optional: new(true)}},
				{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "b"}}},
			},
			wantIs: errdefs.ErrNotImplemented, wantField: "spec.containers[1].envFrom[1].secretRef",
		},
		{
			desc:   "unsupported field path",
			env:    []v1.EnvVar{fieldEnv("P", "status.phase")},
			wantIs: errdefs.ErrInvalidArgument, wantField: "spec.containers[1].env[0].valueFrom.fieldRef",
		},
		{
			desc:   "subscript on a non-map field",
			env:    []v1.EnvVar{fieldEnv("P", "metadata.name['x']")},
			wantIs: errdefs.ErrInvalidArgument, wantField: "spec.containers[1].env[0].valueFrom.fieldRef",
		},
		{
			desc:   "host IP unknown",
			env:    []v1.EnvVar{fieldEnv("H", "status.hostIP")},
			wantIs: errdefs.ErrFailedPrecondition, wantField: "spec.containers[1].env[0].valueFrom.fieldRef",
		},
		{
			desc:   "unknown resource",
			env:    []v1.EnvVar{resourceEnv("R", "", "limits.gpu", "")},
			wantIs: errdefs.ErrInvalidArgument, wantField: "spec.containers[1].env[0].valueFrom.resourceFieldRef",
		},
		{
			desc:   "resource of unknown container",
			env:    []v1.EnvVar{resourceEnv("R", "nope", "limits.cpu", "")},
			wantIs: errdefs.ErrInvalidArgument, wantField: "spec.containers[1].env[0].valueFrom.resourceFieldRef",
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			pod := envPod()
			c := &pod.Spec.Containers[1]
			c.Env, c.EnvFrom = tc.env, tc.envFrom
			_, err := makeEnvironmentVariables(t.Context(), pod, c, nil, nil, EnvOptions{HostIPs: tc.hostIPs})
			if err == nil {
				t.Fatal("want an error")
			}
			if !errors.Is(err, tc.wantIs) {
				t.Errorf("error %v is not %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantField) {
				t.Errorf("error %q does not name %s", err, tc.wantField)
			}
		})
	}
}

func TestContainerFieldPath(t *testing.T) {
	pod := makeTestPod()
	pod.Spec.InitContainers = []v1.Container{{Name: "init0"}, {Name: "init1"}}
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}}
	cases := []struct {
		desc, name, want string
	}{
		{desc: "init", name: "init1", want: "spec.initContainers[1]"},
		{desc: "regular", name: "foo3", want: "spec.containers[2]"},
		{desc: "ephemeral", name: "debug", want: "spec.ephemeralContainers[0]"},
		{desc: "unknown", name: "ghost", want: `container "ghost"`},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			if got := containerFieldPath(pod, tc.name); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
