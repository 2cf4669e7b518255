package test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// A battery of malformed and refused pods, as a new user would write them:
// every one is rejected at apply with an error naming its field, and
// nothing of any of them is stored or reaches the runtime. The policy
// cases are the gateway's defaults (no privileged, host PID/IPC, baseline
// capabilities, host paths only under /var/lib/splitlet) and sync's own
// directories, which no pod may mount.
func TestMalformedPodsAreRejectedAtApply(t *testing.T) {
	s := startStack(t, stackOptions{defaultPolicy: true})
	ptr := func(b bool) *bool { return &b }
	i64 := func(v int64) *int64 { return &v }
	caps := func(c ...v1.Capability) *v1.SecurityContext {
		return &v1.SecurityContext{Capabilities: &v1.Capabilities{Add: c}}
	}
	hostPath := func(p *v1.Pod, path string) {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: path}}})
	}
	cases := []struct {
		desc   string
		mutate func(p *v1.Pod)
		raw    string // a manifest instead of mutate's, for what a Pod struct cannot hold
		field  string // the error names it
	}{
		// names
		{desc: "upper-case pod name", mutate: func(p *v1.Pod) { p.Name = "Web" }, field: "metadata.name"},
		{desc: "pod name of 254 characters", mutate: func(p *v1.Pod) { p.Name = strings.Repeat("a", 254) }, field: "metadata.name"},
		{desc: "namespace with an underscore", mutate: func(p *v1.Pod) { p.Namespace = "bad_ns" }, field: "metadata.namespace"},
		{desc: "container name with an underscore", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Name = "app_1" }, field: "spec.containers[0].name"},
		{desc: "two containers of one name", mutate: func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, p.Spec.Containers[0])
		}, field: "spec.containers[1].name"},
		{desc: "volume name with an underscore", mutate: func(p *v1.Pod) {
			p.Spec.Volumes = []v1.Volume{{Name: "vol_1", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		}, field: "spec.volumes[0].name"},
		{desc: "label key with a space", mutate: func(p *v1.Pod) { p.Labels = map[string]string{"bad key": "x"} }, field: "metadata.labels"},
		{desc: "env var name with =", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "A=B", Value: "x"}} },
			field: "spec.containers[0].env[0].name"},
		{desc: "port name of 16 characters", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{Name: strings.Repeat("p", 16), ContainerPort: 80}}
		}, field: "spec.containers[0].ports[0].name"},
		// required fields and references
		{desc: "no containers", mutate: func(p *v1.Pod) { p.Spec.Containers = nil }, field: "spec.containers"},
		{desc: "no image", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Image = "" }, field: "spec.containers[0].image"},
		{desc: "a mount of a volume that does not exist", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "nope", MountPath: "/x"}}
		}, field: "spec.containers[0].volumeMounts[0].name"},
		// quantities
		{desc: "cpu abc", raw: manifestWith("resources: {limits: {cpu: abc}}"), field: "spec.containers[0].resources.limits.cpu"},
		{desc: "memory 12XB", raw: manifestWith("resources: {requests: {memory: 12XB}}"), field: "spec.containers[0].resources.requests.memory"},
		{desc: "negative memory", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse("-1Gi")}
		}, field: "spec.containers[0].resources.requests[memory]"},
		{desc: "requests above limits", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}
		}, field: "spec.containers[0].resources.requests"},
		{desc: "negative grace period", mutate: func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = i64(-5) }, field: "spec.terminationGracePeriodSeconds"},
		{desc: "zero active deadline", mutate: func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = i64(0) }, field: "spec.activeDeadlineSeconds"},
		{desc: "negative runAsUser", mutate: func(p *v1.Pod) { p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsUser: i64(-1)} },
			field: "spec.containers[0].securityContext.runAsUser"},
		{desc: "negative probe period", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &v1.Probe{PeriodSeconds: -1,
				ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
		}, field: "spec.containers[0].livenessProbe.periodSeconds"},
		// ports
		{desc: "container port 0", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 0}} },
			field: "spec.containers[0].ports[0].containerPort"},
		{desc: "container port 70000", mutate: func(p *v1.Pod) { p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 70000}} },
			field: "spec.containers[0].ports[0].containerPort"},
		{desc: "host port 70000", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 70000}}
		}, field: "spec.containers[0].ports[0].hostPort"},
		// enums
		{desc: "restartPolicy Sometimes", mutate: func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, field: "spec.restartPolicy"},
		{desc: "dnsPolicy Weird", mutate: func(p *v1.Pod) { p.Spec.DNSPolicy = "Weird" }, field: "spec.dnsPolicy"},
		{desc: "imagePullPolicy Sometimes", mutate: func(p *v1.Pod) { p.Spec.Containers[0].ImagePullPolicy = "Sometimes" },
			field: "spec.containers[0].imagePullPolicy"},
		{desc: "terminationMessagePolicy X", mutate: func(p *v1.Pod) { p.Spec.Containers[0].TerminationMessagePolicy = "X" },
			field: "spec.containers[0].terminationMessagePolicy"},
		{desc: "port protocol XYZ", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, Protocol: "XYZ"}}
		}, field: "spec.containers[0].ports[0].protocol"},
		{desc: "toleration operator Maybe", mutate: func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: "Maybe"}} },
			field: "spec.tolerations[0].operator"},
		{desc: "seccomp profile type Bogus", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: "Bogus"}}
		}, field: "spec.securityContext.seccompProfile.type"},
		{desc: "host alias with a bad IP", mutate: func(p *v1.Pod) {
			p.Spec.HostAliases = []v1.HostAlias{{IP: "300.1.1.1", Hostnames: []string{"a"}}}
		}, field: "spec.hostAliases[0].ip"},
		// sizes
		{desc: "annotations over 256 KiB", mutate: func(p *v1.Pod) { p.Annotations = map[string]string{"big": strings.Repeat("x", 300<<10)} },
			field: "metadata.annotations"},
		{desc: "101 containers", mutate: func(p *v1.Pod) {
			for i := 1; i <= 100; i++ {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", i), Image: "busybox:1.36"})
			}
		}, field: "spec.containers: Too many: 101"},
		{desc: "1001 env vars", mutate: func(p *v1.Pod) {
			for i := range 1001 {
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, v1.EnvVar{Name: fmt.Sprintf("E%d", i)})
			}
		}, field: "spec.containers[0].env: Too many: 1001"},
		// host paths
		{desc: "host path with ..", mutate: func(p *v1.Pod) { hostPath(p, "/var/lib/splitlet/../../etc") }, field: "spec.volumes[0].hostPath.path"},
		{desc: "host path /etc", mutate: func(p *v1.Pod) { hostPath(p, "/etc") }, field: "spec.volumes[0].hostPath.path"},
		{desc: "host path of sync's state", mutate: func(p *v1.Pod) { hostPath(p, s.StateDir) }, field: "spec.volumes[0].hostPath.path"},
		{desc: "host path above sync's state", mutate: func(p *v1.Pod) { hostPath(p, "/") }, field: "spec.volumes[0].hostPath.path"},
		// capabilities
		{desc: "SYS_ADMIN", mutate: func(p *v1.Pod) { p.Spec.Containers[0].SecurityContext = caps("SYS_ADMIN") },
			field: "spec.containers[0].securityContext.capabilities.add[0]"},
		{desc: "ALL after a baseline one", mutate: func(p *v1.Pod) { p.Spec.Containers[0].SecurityContext = caps("CHOWN", "ALL") },
			field: "spec.containers[0].securityContext.capabilities.add[1]"},
		{desc: "NET_ADMIN in an init container", mutate: func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox:1.36", SecurityContext: caps("NET_ADMIN")}}
		}, field: "spec.initContainers[0].securityContext.capabilities.add[0]"},
		// privileged and host namespaces
		{desc: "privileged container", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: ptr(true)}
		}, field: "spec.containers[0].securityContext.privileged"},
		{desc: "privileged init container", mutate: func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "busybox:1.36", SecurityContext: &v1.SecurityContext{Privileged: ptr(true)}}}
		}, field: "spec.initContainers[0].securityContext.privileged"},
		{desc: "procMount Unmasked", mutate: func(p *v1.Pod) {
			unmasked := v1.UnmaskedProcMount
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{ProcMount: &unmasked}
		}, field: "spec.containers[0].securityContext.procMount"},
		{desc: "hostUsers false (no user namespaces here)", mutate: func(p *v1.Pod) { p.Spec.HostUsers = ptr(false) }, field: "spec.hostUsers"},
		{desc: "host PID", mutate: func(p *v1.Pod) { p.Spec.HostPID = true }, field: "spec.hostPID"},
		{desc: "host IPC", mutate: func(p *v1.Pod) { p.Spec.HostIPC = true }, field: "spec.hostIPC"},
	}
	if len(cases) < 40 {
		t.Fatalf("%d cases; the battery is meant to hold at least 40", len(cases))
	}
	ctx := context.Background()
	for i, tc := range cases {
		manifest := tc.raw
		if manifest == "" {
			pod := batteryPod(i)
			tc.mutate(pod)
			b, err := yaml.Marshal(pod)
			if err != nil {
				t.Fatal(err)
			}
			manifest = string(b)
		}
		_, err := s.client.Apply(ctx, connect.NewRequest(&podv1.ApplyRequest{Manifest: manifest}))
		if err == nil {
			t.Errorf("%s: applied, want a refusal naming %s", tc.desc, tc.field)
			continue
		}
		if code := connect.CodeOf(err); code != connect.CodeInvalidArgument && code != connect.CodePermissionDenied {
			t.Errorf("%s: code %v (%v), want invalid_argument or permission_denied", tc.desc, code, err)
		}
		if !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v\n  does not name %s", tc.desc, err, tc.field)
		}
	}
	list, err := s.client.List(ctx, connect.NewRequest(&podv1.ListRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.Msg.GetPods()); n != 0 {
		t.Errorf("%d pods stored after the battery, want 0", n)
	}
	if n := len(s.sandboxes()); n != 0 {
		t.Errorf("%d sandboxes in the runtime after the battery, want 0", n)
	}
}

// batteryPod is a valid pod, named per case so no case updates another's.
func batteryPod(i int) *v1.Pod {
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bad-%02d", i), Namespace: "default"},
		Spec: v1.PodSpec{
			HostNetwork: true,
			Containers:  []v1.Container{{Name: "app", Image: "busybox:1.36"}},
		},
	}
}

// manifestWith is a valid pod whose one container has extra, a line of
// YAML flow mapping (e.g. resources a Quantity cannot hold).
func manifestWith(extra string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: bad-raw, namespace: default}\n" +
		"spec:\n  hostNetwork: true\n  containers:\n  - name: app\n    image: busybox:1.36\n    " + extra + "\n"
}
