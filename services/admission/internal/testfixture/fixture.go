// Package testfixture builds the nodes and pods the admission service's tests
// admit, so the admitter, server and process tests speak of the same small
// node: 2 cpu, 1Gi memory, 10 pods, labelled zone=a, linux. ServeCRI serves
// a test's CRI runtime for those reading it through the gateway.
package testfixture

import (
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"testing"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// NodeName is the name of Node.
const NodeName = "node-a"

// Node returns a node with 2 cpu, 1Gi memory and 10 pods allocatable.
func Node() *v1.Node {
	rl := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("2"),
		v1.ResourceMemory: resource.MustParse("1Gi"),
		v1.ResourcePods:   resource.MustParse("10"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: NodeName,
			Labels: map[string]string{
				v1.LabelHostname: NodeName,
				v1.LabelOSStable: runtime.GOOS,
				"zone":           "a",
			},
		},
		Status: v1.NodeStatus{Capacity: rl.DeepCopy(), Allocatable: rl},
	}
}

// Pod returns a pod with one container requesting (and limited to) cpu and
// memory; empty strings leave the request out, so Pod("x", "", "") is
// BestEffort.
func Pod(name, cpu, memory string) *v1.Pod {
	req := v1.ResourceList{}
	if cpu != "" {
		req[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		req[v1.ResourceMemory] = resource.MustParse(memory)
	}
	c := v1.Container{Name: "c", Image: "registry.example/app:1"}
	if len(req) > 0 {
		c.Resources = v1.ResourceRequirements{Requests: req, Limits: req.DeepCopy()}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{c}},
	}
}

// Critical makes pod system-critical by priority (2000000000), as
// system-cluster-critical pods are.
func Critical(pod *v1.Pod) *v1.Pod {
	prio := int32(2000000000)
	pod.Spec.Priority = &prio
	return pod
}

// WithNodeSelector sets the pod's node selector.
func WithNodeSelector(pod *v1.Pod, sel map[string]string) *v1.Pod {
	pod.Spec.NodeSelector = sel
	return pod
}

// WithImage sets the image of the pod's first container.
func WithImage(pod *v1.Pod, image string) *v1.Pod {
	pod.Spec.Containers[0].Image = image
	return pod
}

// FullOfPods returns nine small Guaranteed pods and one BestEffort pod named
// "besteffort": Node's ten pod slots, with cpu and memory to spare, so a
// further pod fails with OutOfpods.
func FullOfPods() []*v1.Pod {
	var pods []*v1.Pod
	for i := range 9 {
		pods = append(pods, Pod(fmt.Sprintf("g%d", i), "10m", "10Mi"))
	}
	return append(pods, Pod("besteffort", "", ""))
}

// TypicalPod is an active pod of a typical size for benchmarks (about 1 KiB
// encoded): two containers with requests and limits, a host-less container
// port, env, a readiness probe, labels, annotations and a toleration, bound
// to NodeName and running. Images are under registry.local/. The suffix
// makes name and UID unique.
func TypicalPod(suffix string) *v1.Pod {
	name := "web-" + suffix
	res := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("256Mi")},
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels:      map[string]string{"app": "web", "pod-template-hash": "5d9f7c"},
			Annotations: map[string]string{"kubernetes.io/config.source": "api", "kubernetes.io/config.seen": "2025-01-01T00:00:00Z"},
		},
		Spec: v1.PodSpec{
			NodeName: NodeName,
			Containers: []v1.Container{
				{
					Name: "app", Image: "registry.local/web:1.2.3", Resources: res,
					Ports:          []v1.ContainerPort{{ContainerPort: 8080, Protocol: v1.ProtocolTCP}},
					Env:            []v1.EnvVar{{Name: "MODE", Value: "prod"}, {Name: "LOG", Value: "info"}},
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready"}}, PeriodSeconds: 5},
				},
				{Name: "sidecar", Image: "registry.local/proxy:0.9", Resources: res},
			},
			Tolerations: []v1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}},
		},
		Status: v1.PodStatus{Phase: v1.PodRunning, QOSClass: v1.PodQOSBurstable, PodIP: "10.0.0.1"},
	}
}

// ServeCRI serves rt as a CRI RuntimeService on a unix socket in a
// temporary directory until t ends, and returns the socket's path.
func ServeCRI(t testing.TB, rt runtimeapi.RuntimeServiceServer) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, rt)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return sock
}
