package validation

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/splitlet/splitlet/services/sync/internal/defaults"
)

// validPod is a defaulted pod that passes validation; each case breaks one
// thing.
func validPod() *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			InitContainers: []v1.Container{{
				Name: "setup", Image: "busybox:1.36", Command: []string{"true"},
			}},
			Containers: []v1.Container{
				{
					Name:  "app",
					Image: "nginx:1.27",
					Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 80}},
					Env:   []v1.EnvVar{{Name: "MODE", Value: "prod"}},
					Resources: v1.ResourceRequirements{
						Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
						Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("128Mi")},
					},
					VolumeMounts:   []v1.VolumeMount{{Name: "data", MountPath: "/data"}},
					LivenessProbe:  &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http")}}},
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}}},
					Lifecycle:      &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}},
				},
				{Name: "sidecar", Image: "envoy:v1.30"},
			},
		},
	}
	defaults.SetDefaults_Pod(p)
	return p
}

type wantErr struct {
	typ  field.ErrorType
	path string
}

func (w wantErr) String() string { return fmt.Sprintf("%s %s", w.path, w.typ) }

func errKeys(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, wantErr{e.Type, e.Field}.String())
	}
	slices.Sort(out)
	return out
}

func wantKeys(ws []wantErr) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.String())
	}
	slices.Sort(out)
	return out
}

func TestValidatePodAcceptsValidPods(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	tests := []struct {
		desc   string
		mutate func(*v1.Pod)
	}{
		{desc: "the base pod"},
		{desc: "restartPolicy on a regular container (ContainerRestartRules)", mutate: func(p *v1.Pod) { p.Spec.Containers[1].RestartPolicy = &always }},
		{desc: "init container restartPolicy Never (ContainerRestartRules)", mutate: func(p *v1.Pod) {
			never := v1.ContainerRestartPolicyNever
			p.Spec.InitContainers[0].RestartPolicy = &never
		}},
		{desc: "RestartAllContainers rule on a regular and a sidecar container", mutate: func(p *v1.Pod) {
			never := v1.ContainerRestartPolicyNever
			rules := []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestartAllContainers,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
			p.Spec.Containers[1].RestartPolicy, p.Spec.Containers[1].RestartPolicyRules = &never, rules
			p.Spec.InitContainers[0].RestartPolicy, p.Spec.InitContainers[0].RestartPolicyRules = &always, rules
		}},
		{desc: "restartable init container with probes", mutate: func(p *v1.Pod) {
			p.Spec.InitContainers[0].RestartPolicy = &always
			p.Spec.InitContainers[0].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1}
		}},
		{desc: "host network with matching host ports", mutate: func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 80
		}},
		{desc: "ephemeral container targeting a container", mutate: func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{
				EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox", ImagePullPolicy: v1.PullIfNotPresent, TerminationMessagePolicy: v1.TerminationMessageReadFile},
				TargetContainerName:      "app",
			}}
		}},
		{desc: "extended resource with equal request and limit", mutate: func(p *v1.Pod) {
			r := &p.Spec.Containers[1].Resources
			r.Limits = v1.ResourceList{"example.com/gpu": resource.MustParse("1")}
			r.Requests = v1.ResourceList{"example.com/gpu": resource.MustParse("1")}
		}},
		{desc: "hostnameOverride a DNS subdomain (HostnameOverride)", mutate: func(p *v1.Pod) { p.Spec.HostnameOverride = new("my.host-1") }},
		{desc: "hostnameOverride of 64 characters", mutate: func(p *v1.Pod) {
			p.Spec.HostnameOverride = new(strings.Repeat("a", 32) + "." + strings.Repeat("b", 31))
		}},
		{desc: "relaxed env names and envFrom prefix (RelaxedEnvironmentVariableValidation)", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env,
				v1.EnvVar{Name: "my.var-1", Value: "x"}, v1.EnvVar{Name: "1ABC", Value: "x"}, v1.EnvVar{Name: "with space~!", Value: "x"})
			p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{Prefix: "1-pre.", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}
		}},
		{desc: "static pod defaults", mutate: func(p *v1.Pod) {
			if err := defaults.ApplyStaticPodDefaults(p, defaults.Source{Kind: defaults.SourceFile, Location: "/m/web.yaml"}, "node-1"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			p := validPod()
			if tc.mutate != nil {
				tc.mutate(p)
			}
			if errs := ValidatePod(p); len(errs) > 0 {
				t.Errorf("ValidatePod: %v", errs)
			}
		})
	}
}

func TestValidatePod(t *testing.T) {
	never := v1.ContainerRestartPolicyNever
	tests := []struct {
		desc   string
		mutate func(*v1.Pod)
		want   []wantErr
	}{
		{desc: "name missing", mutate: func(p *v1.Pod) { p.Name = "" }, want: []wantErr{{field.ErrorTypeRequired, "metadata.name"}}},
		{desc: "name not a DNS subdomain", mutate: func(p *v1.Pod) { p.Name = "Web_1" }, want: []wantErr{{field.ErrorTypeInvalid, "metadata.name"}}},
		{desc: "namespace missing", mutate: func(p *v1.Pod) { p.Namespace = "" }, want: []wantErr{{field.ErrorTypeRequired, "metadata.namespace"}}},
		{desc: "namespace not a DNS label", mutate: func(p *v1.Pod) { p.Namespace = "a.b" }, want: []wantErr{{field.ErrorTypeInvalid, "metadata.namespace"}}},
		{desc: "label value invalid", mutate: func(p *v1.Pod) { p.Labels["app"] = "no spaces" }, want: []wantErr{{field.ErrorTypeInvalid, "metadata.labels"}}},
		{desc: "label key invalid", mutate: func(p *v1.Pod) { p.Labels["-bad"] = "x" }, want: []wantErr{{field.ErrorTypeInvalid, "metadata.labels"}}},
		{desc: "annotation key invalid", mutate: func(p *v1.Pod) { p.Annotations = map[string]string{"a/b/c": "x"} }, want: []wantErr{{field.ErrorTypeInvalid, "metadata.annotations"}}},
		{desc: "no containers", mutate: func(p *v1.Pod) { p.Spec.Containers = nil }, want: []wantErr{{field.ErrorTypeRequired, "spec.containers"}}},
		{desc: "container name missing", mutate: func(p *v1.Pod) { p.Spec.Containers[1].Name = "" }, want: []wantErr{{field.ErrorTypeRequired, "spec.containers[1].name"}}},
		{desc: "container name not a DNS label", mutate: func(p *v1.Pod) { p.Spec.Containers[1].Name = "Side_Car" }, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[1].name"}}},
		{desc: "duplicate regular container", mutate: func(p *v1.Pod) { p.Spec.Containers[1].Name = "app" }, want: []wantErr{{field.ErrorTypeDuplicate, "spec.containers[1].name"}}},
		{desc: "init container named like a container", mutate: func(p *v1.Pod) { p.Spec.InitContainers[0].Name = "app" }, want: []wantErr{{field.ErrorTypeDuplicate, "spec.initContainers[0].name"}}},
		{
			desc: "ephemeral container named like an init container",
			mutate: func(p *v1.Pod) {
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "setup", Image: "busybox", ImagePullPolicy: v1.PullAlways, TerminationMessagePolicy: v1.TerminationMessageReadFile}}}
			},
			want: []wantErr{{field.ErrorTypeDuplicate, "spec.ephemeralContainers[0].name"}},
		},
		{
			desc: "ephemeral container with ports and unknown target",
			mutate: func(p *v1.Pod) {
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{{
					EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox", ImagePullPolicy: v1.PullAlways, TerminationMessagePolicy: v1.TerminationMessageReadFile,
						Ports: []v1.ContainerPort{{ContainerPort: 1, Protocol: v1.ProtocolTCP}}},
					TargetContainerName: "nope",
				}}
			},
			want: []wantErr{{field.ErrorTypeForbidden, "spec.ephemeralContainers[0].ports"}, {field.ErrorTypeNotFound, "spec.ephemeralContainers[0].targetContainerName"}},
		},
		{desc: "image missing", mutate: func(p *v1.Pod) { p.Spec.Containers[1].Image = "" }, want: []wantErr{{field.ErrorTypeRequired, "spec.containers[1].image"}}},
		{desc: "image blank", mutate: func(p *v1.Pod) { p.Spec.InitContainers[0].Image = "   " }, want: []wantErr{{field.ErrorTypeRequired, "spec.initContainers[0].image"}}},
		{desc: "image with surrounding whitespace", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Image = " nginx" }, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].image"}}},
		{desc: "pod restartPolicy unsupported", mutate: func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, want: []wantErr{{field.ErrorTypeNotSupported, "spec.restartPolicy"}}},
		{desc: "pod restartPolicy missing", mutate: func(p *v1.Pod) { p.Spec.RestartPolicy = "" }, want: []wantErr{{field.ErrorTypeRequired, "spec.restartPolicy"}}},
		{desc: "regular container restartPolicy unsupported", mutate: func(p *v1.Pod) {
			bad := v1.ContainerRestartPolicy("Sometimes")
			p.Spec.Containers[1].RestartPolicy = &bad
		}, want: []wantErr{{field.ErrorTypeNotSupported, "spec.containers[1].restartPolicy"}}},
		{
			desc:   "probe on a non-restartable init container",
			mutate: func(p *v1.Pod) { p.Spec.InitContainers[0].ReadinessProbe = p.Spec.Containers[0].ReadinessProbe },
			want:   []wantErr{{field.ErrorTypeForbidden, "spec.initContainers[0].readinessProbe"}},
		},
		{desc: "restartPolicyRules without restartPolicy or exitCodes", mutate: func(p *v1.Pod) {
			p.Spec.Containers[1].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart}}
		}, want: []wantErr{{field.ErrorTypeRequired, "spec.containers[1].restartPolicy"}, {field.ErrorTypeRequired, "spec.containers[1].restartPolicyRules[0].exitCodes"}}},
		{desc: "restartPolicyRules on an ephemeral container", mutate: func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", ImagePullPolicy: v1.PullAlways, TerminationMessagePolicy: v1.TerminationMessageReadFile,
				RestartPolicy: &never, RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
					ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{1}}}}}}}
		}, want: []wantErr{{field.ErrorTypeForbidden, "spec.ephemeralContainers[0].restartPolicy"}, {field.ErrorTypeForbidden, "spec.ephemeralContainers[0].restartPolicyRules"}}},
		{desc: "containerPort out of range", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 70000 }, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].ports[0].containerPort"}}},
		{desc: "containerPort missing", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 }, want: []wantErr{{field.ErrorTypeRequired, "spec.containers[0].ports[0].containerPort"}}},
		{desc: "hostPort out of range", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = -1 }, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].ports[0].hostPort"}}},
		{desc: "port protocol unsupported", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "ICMP" }, want: []wantErr{{field.ErrorTypeNotSupported, "spec.containers[0].ports[0].protocol"}}},
		{desc: "duplicate port name", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: v1.ProtocolTCP})
		}, want: []wantErr{{field.ErrorTypeDuplicate, "spec.containers[0].ports[1].name"}}},
		{desc: "host port claimed twice", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Ports[0].HostPort = 8080
			p.Spec.Containers[1].Ports = []v1.ContainerPort{{ContainerPort: 9090, HostPort: 8080, Protocol: v1.ProtocolTCP}}
		}, want: []wantErr{{field.ErrorTypeDuplicate, "spec.containers[1].ports[0].hostPort"}}},
		{desc: "host network with a different host port", mutate: func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 8080
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].ports[0].hostPort"}}},
		{desc: "request above limit", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("2")
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].resources.requests"}}},
		{desc: "negative limit", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits[v1.ResourceMemory] = resource.MustParse("-1Mi")
			p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("-2Mi")
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].resources.limits[memory]"}, {field.ErrorTypeInvalid, "spec.containers[0].resources.requests[memory]"}}},
		{desc: "unknown unprefixed resource", mutate: func(p *v1.Pod) {
			p.Spec.Containers[1].Resources.Limits = v1.ResourceList{"gpu": resource.MustParse("1")}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[1].resources.limits[gpu]"}}},
		{desc: "extended resource request without limit", mutate: func(p *v1.Pod) {
			p.Spec.Containers[1].Resources.Requests = v1.ResourceList{"example.com/gpu": resource.MustParse("1")}
		}, want: []wantErr{{field.ErrorTypeRequired, "spec.containers[1].resources.limits"}}},
		{desc: "fractional extended resource", mutate: func(p *v1.Pod) {
			p.Spec.Containers[1].Resources.Limits = v1.ResourceList{"example.com/gpu": resource.MustParse("500m")}
			p.Spec.Containers[1].Resources.Requests = v1.ResourceList{"example.com/gpu": resource.MustParse("500m")}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[1].resources.limits[example.com/gpu]"}, {field.ErrorTypeInvalid, "spec.containers[1].resources.requests[example.com/gpu]"}}},
		{desc: "pod-level resource not supported", mutate: func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}}
		}, want: []wantErr{{field.ErrorTypeNotSupported, "spec.resources.limits[ephemeral-storage]"}}},
		// RelaxedEnvironmentVariableValidation (GA): any printable ASCII
		// but '='.
		{desc: "env name with '='", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Env[0].Name = "a=b" }, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].env[0].name"}}},
		{desc: "env name not printable", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Env[0].Name = "a\tb" }, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].env[0].name"}}},
		{desc: "env name not ASCII", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Env[0].Name = "caf\u00e9" }, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].env[0].name"}}},
		{desc: "envFrom prefix with '='", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].EnvFrom = []v1.EnvFromSource{{Prefix: "P=", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].envFrom[0].prefix"}}},
		// EnvFiles: validateFileKeySelector and validateFileKeyRefVolumes.
		{desc: "fileKeyRef to an emptyDir", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Env[0] = v1.EnvVar{Name: "DB", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "data", Path: "env/db.env", Key: "DB"}}}
		}},
		{desc: "fileKeyRef without key, volume or path", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Env[0] = v1.EnvVar{Name: "DB", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{}}}
		}, want: []wantErr{
			{field.ErrorTypeRequired, "spec.containers[0].env[0].valueFrom.fileKeyRef.key"},
			{field.ErrorTypeRequired, "spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName"},
			{field.ErrorTypeRequired, "spec.containers[0].env[0].valueFrom.fileKeyRef.path"},
		}},
		{desc: "fileKeyRef to a missing volume, a path with '..', a key with '='", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Env[0] = v1.EnvVar{Name: "DB", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "nope", Path: "../x", Key: "A=B"}}}
		}, want: []wantErr{
			{field.ErrorTypeInvalid, "spec.containers[0].env[0].valueFrom.fileKeyRef.key"},
			{field.ErrorTypeNotFound, "spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName"},
			{field.ErrorTypeInvalid, "spec.containers[0].env[0].valueFrom.fileKeyRef.path"},
		}},
		{desc: "fileKeyRef to a volume that is not an emptyDir", mutate: func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/lib/splitlet/x"}}})
			p.Spec.Containers[0].Env[0] = v1.EnvVar{Name: "DB", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "cfg", Path: "db.env", Key: "DB"}}}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName"}}},
		{desc: "env name missing", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Env[0].Name = "" }, want: []wantErr{{field.ErrorTypeRequired, "spec.containers[0].env[0].name"}}},
		{desc: "env value and valueFrom", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Env[0].ValueFrom = &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].env[0].valueFrom"}}},
		{desc: "duplicate volume name", mutate: func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
		}, want: []wantErr{{field.ErrorTypeDuplicate, "spec.volumes[1].name"}}},
		{desc: "volume with two sources", mutate: func(p *v1.Pod) {
			p.Spec.Volumes[0].HostPath = &v1.HostPathVolumeSource{Path: "/tmp"}
		}, want: []wantErr{{field.ErrorTypeForbidden, "spec.volumes[0].emptyDir"}, {field.ErrorTypeNotFound, "spec.containers[0].volumeMounts[0].name"}}},
		{desc: "volume without source", mutate: func(p *v1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "empty"})
		}, want: []wantErr{{field.ErrorTypeRequired, "spec.volumes[1]"}}},
		{desc: "mount of a missing volume", mutate: func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[0].Name = "nope" }, want: []wantErr{{field.ErrorTypeNotFound, "spec.containers[0].volumeMounts[0].name"}}},
		{desc: "duplicate mount path", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: "data", MountPath: "/data"})
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].volumeMounts[1].mountPath"}}},
		{desc: "subPath escaping the volume", mutate: func(p *v1.Pod) { p.Spec.Containers[0].VolumeMounts[0].SubPath = "../etc" }, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].volumeMounts[0].subPath"}}},
		{desc: "recursiveReadOnly on a writable mount", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts[0].RecursiveReadOnly = new(v1.RecursiveReadOnlyEnabled)
		}, want: []wantErr{{field.ErrorTypeForbidden, "spec.containers[0].volumeMounts[0].recursiveReadOnly"}}},
		{desc: "recursiveReadOnly with propagation", mutate: func(p *v1.Pod) {
			m := &p.Spec.Containers[0].VolumeMounts[0]
			m.ReadOnly, m.RecursiveReadOnly, m.MountPropagation = true, new(v1.RecursiveReadOnlyIfPossible), new(v1.MountPropagationHostToContainer)
		}, want: []wantErr{{field.ErrorTypeForbidden, "spec.containers[0].volumeMounts[0].recursiveReadOnly"}}},
		{desc: "recursiveReadOnly unknown", mutate: func(p *v1.Pod) {
			m := &p.Spec.Containers[0].VolumeMounts[0]
			m.ReadOnly, m.RecursiveReadOnly = true, new(v1.RecursiveReadOnlyMode("Always"))
		}, want: []wantErr{{field.ErrorTypeNotSupported, "spec.containers[0].volumeMounts[0].recursiveReadOnly"}}},
		{desc: "probe with two handlers", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe.Exec = &v1.ExecAction{Command: []string{"true"}}
		}, want: []wantErr{{field.ErrorTypeForbidden, "spec.containers[0].livenessProbe.httpGet"}}},
		{desc: "probe without handler", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].ReadinessProbe.TCPSocket = nil
		}, want: []wantErr{{field.ErrorTypeRequired, "spec.containers[0].readinessProbe"}}},
		{desc: "liveness successThreshold above 1", mutate: func(p *v1.Pod) { p.Spec.Containers[0].LivenessProbe.SuccessThreshold = 2 }, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].livenessProbe.successThreshold"}}},
		{desc: "startup successThreshold above 1", mutate: func(p *v1.Pod) {
			p.Spec.Containers[1].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 3, FailureThreshold: 1}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[1].startupProbe.successThreshold"}}},
		{desc: "failureThreshold zero", mutate: func(p *v1.Pod) { p.Spec.Containers[0].ReadinessProbe.FailureThreshold = 0 }, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].readinessProbe.failureThreshold"}}},
		{desc: "negative initialDelaySeconds", mutate: func(p *v1.Pod) { p.Spec.Containers[0].ReadinessProbe.InitialDelaySeconds = -1 }, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].readinessProbe.initialDelaySeconds"}}},
		{desc: "probe port name not declared", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe.HTTPGet.Port = intstr.FromString("metrics")
		}, want: []wantErr{{field.ErrorTypeNotFound, "spec.containers[0].livenessProbe.httpGet.port"}}},
		{desc: "probe port number out of range", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].ReadinessProbe.TCPSocket.Port = intstr.FromInt32(0)
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].readinessProbe.tcpSocket.port"}}},
		{desc: "lifecycle hook with two handlers", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Lifecycle.PreStop.Exec = &v1.ExecAction{Command: []string{"sh"}}
		}, want: []wantErr{{field.ErrorTypeForbidden, "spec.containers[0].lifecycle.preStop.sleep"}}},
		{desc: "lifecycle sleep beyond grace period", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Lifecycle.PreStop.Sleep.Seconds = 31
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.containers[0].lifecycle.preStop.sleep"}}},
		{desc: "exec hook without command", mutate: func(p *v1.Pod) {
			p.Spec.Containers[1].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{}}}
		}, want: []wantErr{{field.ErrorTypeRequired, "spec.containers[1].lifecycle.postStart.exec.command"}}},
		{desc: "negative terminationGracePeriodSeconds", mutate: func(p *v1.Pod) {
			g := int64(-5)
			p.Spec.TerminationGracePeriodSeconds = &g
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.terminationGracePeriodSeconds"}}},
		{desc: "terminationGracePeriodSeconds missing", mutate: func(p *v1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = nil
		}, want: []wantErr{{field.ErrorTypeRequired, "spec.terminationGracePeriodSeconds"}}},
		{desc: "dnsPolicy unsupported", mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = "Google" }, want: []wantErr{{field.ErrorTypeNotSupported, "spec.dnsPolicy"}}},
		{desc: "dnsPolicy None without dnsConfig", mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSNone }, want: []wantErr{{field.ErrorTypeRequired, "spec.dnsConfig"}}},
		{desc: "imagePullPolicy unsupported", mutate: func(p *v1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" }, want: []wantErr{{field.ErrorTypeNotSupported, "spec.containers[0].imagePullPolicy"}}},
		{desc: "imagePullPolicy missing (not defaulted)", mutate: func(p *v1.Pod) { p.Spec.InitContainers[0].ImagePullPolicy = "" }, want: []wantErr{{field.ErrorTypeRequired, "spec.initContainers[0].imagePullPolicy"}}},
		{desc: "activeDeadlineSeconds zero", mutate: func(p *v1.Pod) {
			d := int64(0)
			p.Spec.ActiveDeadlineSeconds = &d
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.activeDeadlineSeconds"}}},
		{desc: "hostnameOverride not a DNS subdomain", mutate: func(p *v1.Pod) { p.Spec.HostnameOverride = new("My_Host") }, want: []wantErr{{field.ErrorTypeInvalid, "spec.hostnameOverride"}}},
		{desc: "hostnameOverride empty", mutate: func(p *v1.Pod) { p.Spec.HostnameOverride = new("") }, want: []wantErr{{field.ErrorTypeInvalid, "spec.hostnameOverride"}}},
		{desc: "hostnameOverride longer than 64", mutate: func(p *v1.Pod) { p.Spec.HostnameOverride = new(strings.Repeat("a", 60) + ".bcdef") }, want: []wantErr{{field.ErrorTypeTooLong, "spec.hostnameOverride"}}},
		{desc: "hostnameOverride with setHostnameAsFQDN", mutate: func(p *v1.Pod) {
			p.Spec.HostnameOverride = new("host")
			p.Spec.SetHostnameAsFQDN = new(true)
		}, want: []wantErr{{field.ErrorTypeForbidden, "spec.hostnameOverride"}}},
		{desc: "hostnameOverride with hostNetwork", mutate: func(p *v1.Pod) {
			p.Spec.HostnameOverride = new("host")
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports[0].HostPort = 80
		}, want: []wantErr{{field.ErrorTypeForbidden, "spec.hostnameOverride"}}},
		{desc: "toleration with empty key and Equal", mutate: func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpEqual, Value: "x"}}
		}, want: []wantErr{{field.ErrorTypeInvalid, "spec.tolerations[0].operator"}}},
		{desc: "mirror annotation without nodeName", mutate: func(p *v1.Pod) {
			p.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "x"}
		}, want: []wantErr{{field.ErrorTypeInvalid, "metadata.annotations[kubernetes.io/config.mirror]"}}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			p := validPod()
			tc.mutate(p)
			got, want := errKeys(ValidatePod(p)), wantKeys(tc.want)
			if !slices.Equal(got, want) {
				t.Errorf("errors:\n got  %v\n want %v\n(%v)", got, want, ValidatePod(p))
			}
		})
	}
}

func TestValidatePodMessages(t *testing.T) {
	p := validPod()
	p.Spec.Containers[1].Image = ""
	p.Spec.InitContainers[0].Name = "app"
	err := AsError(ValidatePod(p))
	if !errors.Is(err, errdefs.ErrInvalidArgument) {
		t.Fatalf("AsError = %v, want ErrInvalidArgument", err)
	}
	for _, want := range []string{
		"spec.containers[1].image: Required value",
		`spec.initContainers[0].name: Duplicate value: "app"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not contain %q", err, want)
		}
	}
	if AsError(nil) != nil {
		t.Error("AsError(nil) != nil")
	}
}

func TestSplitletBoundsOnOnePod(t *testing.T) {
	pod := func(containers, env int) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "default"}}
		for i := range containers {
			c := v1.Container{Name: fmt.Sprintf("c%d", i), Image: "busybox", TerminationMessagePolicy: v1.TerminationMessageReadFile, ImagePullPolicy: v1.PullIfNotPresent}
			for j := range env {
				c.Env = append(c.Env, v1.EnvVar{Name: fmt.Sprintf("E%d", j), Value: "x"})
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		p.Spec.RestartPolicy, p.Spec.DNSPolicy = v1.RestartPolicyAlways, v1.DNSClusterFirst
		p.Spec.TerminationGracePeriodSeconds = new(int64)
		return p
	}
	if errs := ValidatePod(pod(MaxContainersPerPod, MaxEnvPerContainer)); len(errs) != 0 {
		t.Fatalf("a pod at the bounds: %v", errs)
	}
	if errs := ValidatePod(pod(MaxContainersPerPod+1, 1)); len(errs) != 1 || errs[0].Field != "spec.containers" || errs[0].Type != field.ErrorTypeTooMany {
		t.Errorf("one container too many: %v", errs)
	}
	if errs := ValidatePod(pod(1, MaxEnvPerContainer+1)); len(errs) != 1 || errs[0].Field != "spec.containers[0].env" {
		t.Errorf("one env var too many: %v", errs)
	}
}
