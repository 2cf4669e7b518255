// Package podresources is the kubelet's pod-resources API
// (k8s.io/kubelet/pkg/apis/podresources/v1, PodResourcesLister) served by
// splitlet-sync on a unix socket, for monitoring agents and device plugins
// that ask which pods and containers run on the node
// (pkg/kubelet/apis/podresources/server_v1.go, served by the kubelet's
// ListenAndServePodResources).
//
// Pods come from the sync loop's notion of active pods, the kubelet's
// GetActivePods (KubeletPodResourcesListUseActivePods, on in v1.36): a
// pod whose containers stopped for good is left out of List and is not
// found by Get (KubeletPodResourcesGet). Splitlet has no device, CPU or
// memory manager and no DRA, so every container's devices, cpu_ids,
// memory and dynamic_resources are empty, and GetAllocatableResources
// answers empty sets: what a kubelet with the none policies and no device
// plugins answers.
//
// Calls are rate limited as the kubelet limits them (ratelimit.go).
//
// Usage sketch:
//
//	srv := podresources.NewGRPCServer(podresources.New(kubelet, podresources.NewMetrics(reg)))
//	ln, err := podresources.Listen("/var/lib/splitlet/sync/pod-resources/kubelet.sock")
//	go srv.Serve(ln)
//	defer srv.GracefulStop()
package podresources

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/splitlet/splitlet/internal/apiauth"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/syncloop"
)

// PodsProvider gives the active pods (*syncloop.Kubelet): the pods
// admitted and not known to have terminated. GetActivePodByName returns
// false for a pod that is unknown or no longer active.
type PodsProvider interface {
	GetActivePods() []*v1.Pod
	GetActivePodByName(namespace, name string) (*v1.Pod, bool)
}

var _ PodsProvider = (*syncloop.Kubelet)(nil)

// Server is the v1 PodResourcesLister.
type Server struct {
	podresourcesv1.UnsafePodResourcesListerServer
	pods    PodsProvider
	metrics *Metrics
}

var _ podresourcesv1.PodResourcesListerServer = (*Server)(nil)

// New returns the server answering from pods and counting its calls in
// metrics (NewMetrics; nil counts none).
func New(pods PodsProvider, metrics *Metrics) *Server {
	return &Server{pods: pods, metrics: metrics}
}

// NewGRPCServer returns a gRPC server serving s, rate limited as the
// kubelet's (DefaultQPS, DefaultBurstTokens).
func NewGRPCServer(s *Server) *grpc.Server {
	g := grpc.NewServer(grpc.UnaryInterceptor(limitUnary(newLimiter())))
	podresourcesv1.RegisterPodResourcesListerServer(g, s)
	return g
}

// Listen binds the unix socket at path, in a directory made 0750 as the
// kubelet makes its pod-resources directory. The socket is apiauth's:
// mode 0660, a socket left by a process that is gone replaced, one
// something still answers on (a kubelet's) an error. Closing the listener
// removes the socket.
func Listen(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("pod-resources socket: %w", err)
	}
	ln, err := apiauth.Listen{Address: apiauth.UnixScheme + path}.Listener()
	if err != nil {
		return nil, fmt.Errorf("pod-resources socket %s: %w", path, err)
	}
	return ln, nil
}

// podResources is one pod's answer: its restartable init containers
// (sidecars, which run beside the others) then its containers, as the
// kubelet's List and Get build it; other init containers are left out.
func podResources(pod *v1.Pod) *podresourcesv1.PodResources {
	res := &podresourcesv1.PodResources{
		Name:       pod.Name,
		Namespace:  pod.Namespace,
		Containers: make([]*podresourcesv1.ContainerResources, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers)),
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; container.IsRestartableInitContainer(c) {
			res.Containers = append(res.Containers, containerResources(c))
		}
	}
	for i := range pod.Spec.Containers {
		res.Containers = append(res.Containers, containerResources(&pod.Spec.Containers[i]))
	}
	return res
}

// containerResources is the kubelet's getContainerResources with no
// device manager, CPU manager, memory manager or DRA behind it: only the
// name. A kubelet with the none CPU and memory policies and no device
// plugins or claims answers the same.
func containerResources(c *v1.Container) *podresourcesv1.ContainerResources {
	return &podresourcesv1.ContainerResources{Name: c.Name}
}
