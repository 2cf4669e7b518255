package predicate

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// resources is the scheduler's framework.Resource: quantities in the units
// the kubelet's messages print (millicores, bytes, counts).
type resources struct {
	milliCPU         int64
	memory           int64
	ephemeralStorage int64
	allowedPods      int64
	scalar           map[v1.ResourceName]int64
}

// add accumulates list as framework.Resource.Add: resources that are neither
// cpu, memory, ephemeral-storage, pods nor scalar are not accounted.
func (r *resources) add(list v1.ResourceList) {
	for name, q := range list {
		switch name {
		case v1.ResourceCPU:
			r.milliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.ephemeralStorage += q.Value()
		case v1.ResourcePods:
			r.allowedPods += q.Value()
		default:
			if isScalarResourceName(name) {
				if r.scalar == nil {
					r.scalar = map[v1.ResourceName]int64{}
				}
				r.scalar[name] += q.Value()
			}
		}
	}
}

// addResources accumulates o, which is left as it was.
func (r *resources) addResources(o *resources) {
	r.milliCPU += o.milliCPU
	r.memory += o.memory
	r.ephemeralStorage += o.ephemeralStorage
	r.allowedPods += o.allowedPods
	for name, v := range o.scalar {
		if r.scalar == nil {
			r.scalar = map[v1.ResourceName]int64{}
		}
		r.scalar[name] += v
	}
}

// podRequests is what the pod will hold on the node, computed as the
// scheduler does (computePodResourceRequest): the sum of regular containers
// and sidecars, the largest init-container phase, and the pod overhead; with
// pod-level requests taking the place of the container sum where set.
func podRequests(pod *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// activePodRequests is what an admitted pod holds. A pod being resized in
// place holds the larger of what it asked for and what it was given, which
// the status carries (the scheduler's NodeInfo.AddPod with
// InPlacePodVerticalScaling).
func activePodRequests(pod *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
}

// fits checks the pod's requests against what the node has left beside
// nOthers active pods holding used, as the scheduler's noderesources.Fits
// (fitsRequest). The order is pods, cpu, memory, ephemeral-storage, then
// scalar resources by name; the kubelet reports only the first failure, so
// the order decides the reason.
func fits(pod *v1.Pod, nOthers int, used *resources, node *v1.Node) []*lifecycle.InsufficientResourceError {
	var allocatable, want resources
	allocatable.add(node.Status.Allocatable)
	want.add(podRequests(pod))

	var out []*lifecycle.InsufficientResourceError
	if int64(nOthers)+1 > allocatable.allowedPods {
		out = append(out, &lifecycle.InsufficientResourceError{
			ResourceName: v1.ResourcePods, Requested: 1,
			Used: int64(nOthers), Capacity: allocatable.allowedPods,
		})
	}
	if want.milliCPU == 0 && want.memory == 0 && want.ephemeralStorage == 0 && len(want.scalar) == 0 {
		return out
	}
	check := func(name v1.ResourceName, req, usedQ, capQ int64) {
		if req > 0 && req > capQ-usedQ {
			out = append(out, &lifecycle.InsufficientResourceError{
				ResourceName: name, Requested: req, Used: usedQ, Capacity: capQ,
			})
		}
	}
	check(v1.ResourceCPU, want.milliCPU, used.milliCPU, allocatable.milliCPU)
	check(v1.ResourceMemory, want.memory, used.memory, allocatable.memory)
	check(v1.ResourceEphemeralStorage, want.ephemeralStorage, used.ephemeralStorage, allocatable.ephemeralStorage)
	names := make([]v1.ResourceName, 0, len(want.scalar))
	for name := range want.scalar {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		check(name, want.scalar[name], used.scalar[name], allocatable.scalar[name])
	}
	return out
}

// removeMissingExtendedResources returns a copy of the pod without container
// requests for extended resources the node does not advertise at all, as the
// kubelet's function of that name; unlike it, the pod itself when there is
// nothing to drop (the usual case: callers only read the result, and the copy
// was most of what an Admit allocated). Such resources are cluster-level (or
// backed by DRA) and not this node's to count; a resource the node
// advertises, even at zero, is kept and checked. Native resources
// (hugepages-*, kubernetes.io/*) are always kept, so asking for one the node
// lacks fails with OutOf<resource> and capacity 0.
func removeMissingExtendedResources(pod *v1.Pod, node *v1.Node) *v1.Pod {
	missing := func(name v1.ResourceName) bool {
		if !isExtendedResourceName(name) {
			return false
		}
		_, advertised := node.Status.Allocatable[name]
		return !advertised
	}
	anyMissing := func(containers []v1.Container) bool {
		for i := range containers {
			for name := range containers[i].Resources.Requests {
				if missing(name) {
					return true
				}
			}
		}
		return false
	}
	if !anyMissing(pod.Spec.Containers) && !anyMissing(pod.Spec.InitContainers) {
		return pod
	}
	filter := func(containers []v1.Container) {
		for i := range containers {
			kept := v1.ResourceList{}
			for name, q := range containers[i].Resources.Requests {
				if !missing(name) {
					kept[name] = q
				}
			}
			containers[i].Resources.Requests = kept
		}
	}
	cp := pod.DeepCopy()
	filter(cp.Spec.Containers)
	filter(cp.Spec.InitContainers)
	return cp
}

// isNativeResource: names without a domain, or in the kubernetes.io domain
// (v1helper.IsNativeResource).
func isNativeResource(name v1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || isPrefixedNativeResource(name)
}

func isPrefixedNativeResource(name v1.ResourceName) bool {
	return strings.Contains(string(name), v1.ResourceDefaultNamespacePrefix)
}

// isExtendedResourceName: a domain-qualified name outside kubernetes.io that
// would be a valid quota name (v1helper.IsExtendedResourceName).
func isExtendedResourceName(name v1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// isScalarResourceName: the resources the scheduler counts besides cpu,
// memory, ephemeral-storage and pods (schedutil.IsScalarResourceName).
func isScalarResourceName(name v1.ResourceName) bool {
	return isExtendedResourceName(name) ||
		strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) ||
		isPrefixedNativeResource(name) ||
		strings.HasPrefix(string(name), v1.ResourceAttachableVolumesPrefix)
}
