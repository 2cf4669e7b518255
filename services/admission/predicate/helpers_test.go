package predicate

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testNode has 1 cpu, 1Gi memory, 10Gi ephemeral storage, 3 pods, two GPUs
// and an advertised-but-empty extended resource.
func testNode() *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{
			v1.LabelOSStable: "linux", v1.LabelHostname: "node-a", "zone": "z1", "gen": "5",
		}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU:              resource.MustParse("1"),
			v1.ResourceMemory:           resource.MustParse("1Gi"),
			v1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
			v1.ResourcePods:             resource.MustParse("3"),
			"example.com/gpu":           resource.MustParse("2"),
			"example.com/zero":          resource.MustParse("0"),
		}},
	}
}

type podOpt func(*v1.Pod)

func mkPod(name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func list(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// requests sets the main container's requests.
func requests(kv ...string) podOpt {
	return func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests = list(kv...) }
}

func initContainer(sidecar bool, kv ...string) podOpt {
	return func(p *v1.Pod) {
		c := v1.Container{Name: "init", Resources: v1.ResourceRequirements{Requests: list(kv...)}}
		if sidecar {
			always := v1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func overhead(kv ...string) podOpt {
	return func(p *v1.Pod) { p.Spec.Overhead = list(kv...) }
}

func hostPort(port int32, proto v1.Protocol, ip string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports,
			v1.ContainerPort{ContainerPort: 80, HostPort: port, Protocol: proto, HostIP: ip})
	}
}

func initHostPort(sidecar bool, port int32) podOpt {
	return func(p *v1.Pod) {
		c := v1.Container{Name: "init", Ports: []v1.ContainerPort{{ContainerPort: 80, HostPort: port}}}
		if sidecar {
			always := v1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func nodeSelector(kv ...string) podOpt {
	return func(p *v1.Pod) {
		p.Spec.NodeSelector = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func requiredAffinity(terms ...v1.NodeSelectorTerm) podOpt {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms},
		}}
	}
}

func labelTerm(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

func nodeName(n string) podOpt { return func(p *v1.Pod) { p.Spec.NodeName = n } }

func tolerations(t ...v1.Toleration) podOpt { return func(p *v1.Pod) { p.Spec.Tolerations = t } }

func annotation(k, v string) podOpt {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func podLabel(k, v string) podOpt {
	return func(p *v1.Pod) { p.Labels = map[string]string{k: v} }
}

func podOS(os v1.OSName) podOpt { return func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: os} } }

func podLevelRequests(kv ...string) podOpt {
	return func(p *v1.Pod) { p.Spec.Resources = &v1.ResourceRequirements{Requests: list(kv...)} }
}

func strictGroups() podOpt {
	return func(p *v1.Pod) {
		strict := v1.SupplementalGroupsPolicyStrict
		p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict}
	}
}
