package nodeapi

import (
	"fmt"
	"net/http"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

var metaPodList = metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}

// getPods lists the pods sync runs, from every source, with the status
// sync generated for them. Matches the kubelet's getPods (GetPods: the pod
// manager's pods, static pods with their status).
func (s *Server) getPods(w http.ResponseWriter, r *http.Request) {
	writePodList(w, r, s.opts.Pods.GetPodsWithStatus())
}

// getRunningPods lists the pods the runtime runs: ready sandboxes and
// running containers carrying the kubelet's pod labels, each as a pod with
// its UID, name, namespace and containers' names and images, nothing more.
// Matches the kubelet's getRunningPods (GetRunningPods: the runtime cache's
// GetPods(all=false), each through ToAPIPod).
func (s *Server) getRunningPods(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sandboxes, err := s.opts.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}},
	})
	if err != nil {
		http.Error(w, fmt.Sprintf("list sandboxes: %v", err), http.StatusInternalServerError)
		return
	}
	containers, err := s.opts.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}},
	})
	if err != nil {
		http.Error(w, fmt.Sprintf("list containers: %v", err), http.StatusInternalServerError)
		return
	}
	running := kuberuntime.GroupRunningPods(sandboxes.GetItems(), containers.GetContainers())
	pods := make([]*v1.Pod, 0, len(running))
	for _, rp := range running {
		pods = append(pods, toAPIPod(rp))
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	writePodList(w, r, pods)
}

// toAPIPod is the kubelet's kubecontainer.Pod.ToAPIPod.
func toAPIPod(rp *kuberuntime.RunningPod) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: rp.UID, Name: rp.Name, Namespace: rp.Namespace}}
	for _, c := range rp.Containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{
			Name:  c.GetLabels()[kuberuntime.KubernetesContainerNameLabel],
			Image: c.GetImage().GetImage(),
		})
	}
	// The runtime lists in no particular order.
	sort.Slice(pod.Spec.Containers, func(i, j int) bool { return pod.Spec.Containers[i].Name < pod.Spec.Containers[j].Name })
	return pod
}
