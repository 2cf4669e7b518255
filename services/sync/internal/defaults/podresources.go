package defaults

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// defaultPodRequests matches defaultPodRequests of the API server
// (PodLevelResources, beta and on by default): when pod-level limits are
// set, each missing pod-level request becomes the containers' effective
// request for that resource if they request it, else the pod-level limit.
// Only cpu, memory and hugepages are pod-level resources; hugepages are not
// overcommittable, so they never take the containers' aggregate.
//
// Not done here (rarely relevant to a node-local source): defaultPodLimits
// and defaultHugePagePodLimits, which derive pod-level limits from
// container limits.
func defaultPodRequests(pod *v1.Pod) {
	res := pod.Spec.Resources
	if res == nil || len(res.Limits) == 0 {
		return
	}
	reqs := res.Requests
	if reqs == nil {
		reqs = v1.ResourceList{}
	}
	for name, q := range AggregateContainerRequests(&pod.Spec) {
		if _, ok := reqs[name]; !ok && isPodLevelResource(name) && !isHugePages(name) {
			reqs[name] = q.DeepCopy()
		}
	}
	for name, lim := range res.Limits {
		if _, ok := reqs[name]; !ok && isPodLevelResource(name) {
			reqs[name] = lim.DeepCopy()
		}
	}
	if len(reqs) > 0 {
		res.Requests = reqs
	}
}

// AggregateContainerRequests returns what the pod's containers request in
// total, the way the scheduler and kubelet account for it: regular and
// restartable init (sidecar) containers run together and add up; each
// ordinary init container runs alone beside the sidecars started before it,
// and the pod needs the larger of the two.
//
// Matches AggregateContainerRequests in k8s.io/component-helpers/resource
// (without pod overhead or in-place resize status).
func AggregateContainerRequests(spec *v1.PodSpec) v1.ResourceList {
	total := v1.ResourceList{}
	for i := range spec.Containers {
		addResourceList(total, spec.Containers[i].Resources.Requests)
	}
	sidecars := v1.ResourceList{}
	initPeak := v1.ResourceList{}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			addResourceList(sidecars, c.Resources.Requests)
			maxResourceList(initPeak, sidecars)
			continue
		}
		during := v1.ResourceList{}
		addResourceList(during, c.Resources.Requests)
		addResourceList(during, sidecars)
		maxResourceList(initPeak, during)
	}
	addResourceList(total, sidecars)
	maxResourceList(total, initPeak)
	return total
}

func addResourceList(into, add v1.ResourceList) {
	for name, q := range add {
		cur, ok := into[name]
		if !ok {
			into[name] = q.DeepCopy()
			continue
		}
		cur.Add(q)
		into[name] = cur
	}
}

func maxResourceList(into, other v1.ResourceList) {
	for name, q := range other {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}

func isPodLevelResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory || isHugePages(name)
}

func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}
