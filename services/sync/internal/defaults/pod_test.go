package defaults

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func minimalPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "app", Image: "nginx:1.27"}},
		},
	}
}

func TestSetDefaultsPod(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	tests := []struct {
		desc   string
		mutate func(*v1.Pod)
		check  func(*testing.T, *v1.Pod)
	}{
		{
			desc: "pod spec defaults",
			check: func(t *testing.T, p *v1.Pod) {
				s := p.Spec
				if p.Namespace != "default" {
					t.Errorf("namespace = %q", p.Namespace)
				}
				if s.RestartPolicy != v1.RestartPolicyAlways {
					t.Errorf("restartPolicy = %q", s.RestartPolicy)
				}
				if s.DNSPolicy != v1.DNSClusterFirst {
					t.Errorf("dnsPolicy = %q", s.DNSPolicy)
				}
				if s.TerminationGracePeriodSeconds == nil || *s.TerminationGracePeriodSeconds != 30 {
					t.Errorf("terminationGracePeriodSeconds = %v", s.TerminationGracePeriodSeconds)
				}
				if s.SchedulerName != "default-scheduler" {
					t.Errorf("schedulerName = %q", s.SchedulerName)
				}
				if s.SecurityContext == nil {
					t.Error("securityContext not defaulted")
				}
				if s.EnableServiceLinks == nil || !*s.EnableServiceLinks {
					t.Errorf("enableServiceLinks = %v", s.EnableServiceLinks)
				}
			},
		},
		{
			desc: "set fields are kept",
			mutate: func(p *v1.Pod) {
				grace := int64(5)
				links := false
				p.Namespace = "team"
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				p.Spec.DNSPolicy = v1.DNSDefault
				p.Spec.TerminationGracePeriodSeconds = &grace
				p.Spec.EnableServiceLinks = &links
				p.Spec.Containers[0].ImagePullPolicy = v1.PullNever
			},
			check: func(t *testing.T, p *v1.Pod) {
				if p.Namespace != "team" || p.Spec.RestartPolicy != v1.RestartPolicyNever || p.Spec.DNSPolicy != v1.DNSDefault ||
					*p.Spec.TerminationGracePeriodSeconds != 5 || *p.Spec.EnableServiceLinks || p.Spec.Containers[0].ImagePullPolicy != v1.PullNever {
					t.Errorf("set fields changed: %+v", p.Spec)
				}
			},
		},
		{
			desc: "container defaults",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: v1.ProtocolUDP}}
				p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
			},
			check: func(t *testing.T, p *v1.Pod) {
				c := p.Spec.Containers[0]
				if c.TerminationMessagePath != "/dev/termination-log" || c.TerminationMessagePolicy != v1.TerminationMessageReadFile {
					t.Errorf("termination message = %q %q", c.TerminationMessagePath, c.TerminationMessagePolicy)
				}
				if c.Ports[0].Protocol != v1.ProtocolTCP || c.Ports[1].Protocol != v1.ProtocolUDP {
					t.Errorf("port protocols = %q %q", c.Ports[0].Protocol, c.Ports[1].Protocol)
				}
				if c.Ports[0].HostPort != 0 {
					t.Errorf("hostPort defaulted without hostNetwork: %d", c.Ports[0].HostPort)
				}
				if c.Env[0].ValueFrom.FieldRef.APIVersion != "v1" {
					t.Errorf("fieldRef apiVersion = %q", c.Env[0].ValueFrom.FieldRef.APIVersion)
				}
			},
		},
		{
			desc: "probe and lifecycle defaults",
			mutate: func(p *v1.Pod) {
				c := &p.Spec.Containers[0]
				c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(8080)}}}
				c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 3, FailureThreshold: 7}
				c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9000}}}
				c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http")}}}
			},
			check: func(t *testing.T, p *v1.Pod) {
				c := p.Spec.Containers[0]
				l := c.LivenessProbe
				if l.TimeoutSeconds != 1 || l.PeriodSeconds != 10 || l.SuccessThreshold != 1 || l.FailureThreshold != 3 {
					t.Errorf("liveness probe = %+v", l)
				}
				if l.HTTPGet.Path != "/" || l.HTTPGet.Scheme != v1.URISchemeHTTP {
					t.Errorf("httpGet = %+v", l.HTTPGet)
				}
				r := c.ReadinessProbe
				if r.PeriodSeconds != 3 || r.FailureThreshold != 7 || r.TimeoutSeconds != 1 {
					t.Errorf("readiness probe = %+v", r)
				}
				if c.StartupProbe.GRPC.Service == nil || *c.StartupProbe.GRPC.Service != "" {
					t.Errorf("grpc service = %v", c.StartupProbe.GRPC.Service)
				}
				if h := c.Lifecycle.PreStop.HTTPGet; h.Path != "/" || h.Scheme != v1.URISchemeHTTP {
					t.Errorf("preStop httpGet = %+v", h)
				}
			},
		},
		{
			desc: "requests default from limits, existing requests kept",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources = v1.ResourceRequirements{
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
				}
				p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox", Resources: v1.ResourceRequirements{
					Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
				}}}
			},
			check: func(t *testing.T, p *v1.Pod) {
				r := p.Spec.Containers[0].Resources.Requests
				if q := r[v1.ResourceCPU]; q.String() != "250m" {
					t.Errorf("cpu request = %s", q.String())
				}
				if q := r[v1.ResourceMemory]; q.String() != "1Gi" {
					t.Errorf("memory request = %s", q.String())
				}
				if q := p.Spec.InitContainers[0].Resources.Requests[v1.ResourceMemory]; q.String() != "64Mi" {
					t.Errorf("init memory request = %s", q.String())
				}
			},
		},
		{
			desc: "quantities round up to milli precision",
			mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100.5u")}
			},
			check: func(t *testing.T, p *v1.Pod) {
				if q := p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU]; q.String() != "1m" {
					t.Errorf("cpu request = %s, want 1m", q.String())
				}
			},
		},
		{
			desc: "host network copies container ports to host ports",
			mutate: func(p *v1.Pod) {
				p.Spec.HostNetwork = true
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 8080}}
			},
			check: func(t *testing.T, p *v1.Pod) {
				if hp := p.Spec.Containers[0].Ports[0].HostPort; hp != 8080 {
					t.Errorf("hostPort = %d, want 8080", hp)
				}
			},
		},
		{
			desc: "restartable init container keeps its restartPolicy",
			mutate: func(p *v1.Pod) {
				p.Spec.RestartPolicy = v1.RestartPolicyNever
				p.Spec.InitContainers = []v1.Container{{Name: "sidecar", Image: "envoy:v1", RestartPolicy: &always}}
			},
			check: func(t *testing.T, p *v1.Pod) {
				rp := p.Spec.InitContainers[0].RestartPolicy
				if rp == nil || *rp != v1.ContainerRestartPolicyAlways {
					t.Errorf("init restartPolicy = %v", rp)
				}
				if p.Spec.RestartPolicy != v1.RestartPolicyNever {
					t.Errorf("pod restartPolicy = %q", p.Spec.RestartPolicy)
				}
				if p.Spec.InitContainers[0].TerminationMessagePolicy != v1.TerminationMessageReadFile {
					t.Error("init container not defaulted")
				}
			},
		},
		{
			desc: "ephemeral containers are defaulted",
			mutate: func(p *v1.Pod) {
				p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
			},
			check: func(t *testing.T, p *v1.Pod) {
				e := p.Spec.EphemeralContainers[0]
				if e.ImagePullPolicy != v1.PullAlways || e.TerminationMessagePath != "/dev/termination-log" {
					t.Errorf("ephemeral container = %+v", e.EphemeralContainerCommon)
				}
			},
		},
		{
			desc: "volume defaults",
			mutate: func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{
					{Name: "scratch"},
					{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "c"}}}},
					{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/log"}}},
					{Name: "tok", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "t"}}}}}},
				}
			},
			check: func(t *testing.T, p *v1.Pod) {
				v := p.Spec.Volumes
				if v[0].EmptyDir == nil {
					t.Error("volume without source did not become emptyDir")
				}
				if v[1].ConfigMap.DefaultMode == nil || *v[1].ConfigMap.DefaultMode != 0o644 {
					t.Errorf("configMap defaultMode = %v", v[1].ConfigMap.DefaultMode)
				}
				if v[2].HostPath.Type == nil || *v[2].HostPath.Type != v1.HostPathUnset {
					t.Errorf("hostPath type = %v", v[2].HostPath.Type)
				}
				if e := v[3].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds; e == nil || *e != 3600 {
					t.Errorf("token expiration = %v", e)
				}
			},
		},
		{
			desc: "pod-level requests default from containers, then from limits",
			mutate: func(p *v1.Pod) {
				p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{
					v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("4Gi"),
				}}
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "two", Image: "busybox"})
				p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m")}
				p.Spec.Containers[1].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
			},
			check: func(t *testing.T, p *v1.Pod) {
				r := p.Spec.Resources.Requests
				if q := r[v1.ResourceCPU]; q.String() != "1500m" {
					t.Errorf("pod cpu request = %s, want 1500m (sum of containers)", q.String())
				}
				if q := r[v1.ResourceMemory]; q.String() != "4Gi" {
					t.Errorf("pod memory request = %s, want 4Gi (the limit)", q.String())
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			p := minimalPod()
			if tc.mutate != nil {
				tc.mutate(p)
			}
			SetDefaults_Pod(p)
			tc.check(t, p)

			again := p.DeepCopy()
			SetDefaults_Pod(again)
			if !equality.Semantic.DeepEqual(p, again) {
				t.Error("SetDefaults_Pod is not idempotent")
			}
		})
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	const digest = "sha256:0123456789012345678901234567890123456789012345678901234567890123"
	tests := []struct {
		desc  string
		image string
		want  v1.PullPolicy
	}{
		{desc: "no tag means latest", image: "nginx", want: v1.PullAlways},
		{desc: "explicit latest", image: "nginx:latest", want: v1.PullAlways},
		{desc: "fixed tag", image: "nginx:1.27", want: v1.PullIfNotPresent},
		{desc: "registry with port and no tag", image: "localhost:5000/app", want: v1.PullAlways},
		{desc: "registry with port and tag", image: "localhost:5000/app:v2", want: v1.PullIfNotPresent},
		{desc: "digest only", image: "nginx@" + digest, want: v1.PullIfNotPresent},
		{desc: "latest tag and digest", image: "nginx:latest@" + digest, want: v1.PullAlways},
		{desc: "other tag and digest", image: "nginx:1.27@" + digest, want: v1.PullIfNotPresent},
		{desc: "unparsable reference", image: "Not/A:Valid:Ref", want: v1.PullIfNotPresent},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			if got := DefaultPullPolicy(tc.image); got != tc.want {
				t.Errorf("DefaultPullPolicy(%q) = %s, want %s", tc.image, got, tc.want)
			}
			p := minimalPod()
			p.Spec.Containers[0].Image = tc.image
			SetDefaults_Pod(p)
			if got := p.Spec.Containers[0].ImagePullPolicy; got != tc.want {
				t.Errorf("SetDefaults_Pod imagePullPolicy = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestAggregateContainerRequests(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	cpu := func(s string) v1.ResourceRequirements {
		return v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(s)}}
	}
	tests := []struct {
		desc string
		spec v1.PodSpec
		want string
	}{
		{desc: "regular containers add up", spec: v1.PodSpec{Containers: []v1.Container{{Resources: cpu("1")}, {Resources: cpu("500m")}}}, want: "1500m"},
		{desc: "big init container dominates", spec: v1.PodSpec{InitContainers: []v1.Container{{Resources: cpu("3")}}, Containers: []v1.Container{{Resources: cpu("1")}}}, want: "3"},
		{desc: "sidecar adds to regular containers", spec: v1.PodSpec{InitContainers: []v1.Container{{Resources: cpu("1"), RestartPolicy: &always}}, Containers: []v1.Container{{Resources: cpu("1")}}}, want: "2"},
		{
			desc: "init container after a sidecar runs beside it",
			spec: v1.PodSpec{InitContainers: []v1.Container{{Resources: cpu("1"), RestartPolicy: &always}, {Resources: cpu("2")}}, Containers: []v1.Container{{Resources: cpu("500m")}}},
			want: "3",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got := AggregateContainerRequests(&tc.spec)[v1.ResourceCPU]
			if want := resource.MustParse(tc.want); got.Cmp(want) != 0 {
				t.Errorf("cpu = %s, want %s", got.String(), tc.want)
			}
		})
	}
}
