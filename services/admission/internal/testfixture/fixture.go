// Package testfixture builds the nodes and pods the admission service's tests
// admit, so the admitter, server and process tests speak of the same small
// node: 2 cpu, 1Gi memory, 10 pods, labelled zone=a, linux.
package testfixture

import (
	"fmt"
	"runtime"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
