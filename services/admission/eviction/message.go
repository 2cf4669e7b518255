package eviction

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Message formats and event annotation keys, spelled as the kubelet's
// (pkg/kubelet/eviction/helpers.go) so that pod statuses and events read the
// same. Each message ends with a space, as the kubelet's do.
const (
	nodeLowMessageFmt      = "The node was low on resource: %v. "
	thresholdMetMessageFmt = "Threshold quantity: %v, available: %v. "
	containerMessageFmt    = "Container %s was using %s, request is %s, has larger consumption of %v. "
	podMessageFmt          = "Pod %s was using %s, request is %s, has larger consumption of %v. "

	// OffendingContainersKey lists the containers that used more than they
	// requested.
	OffendingContainersKey = "offending_containers"
	// OffendingContainersUsageKey lists those containers' usage.
	OffendingContainersUsageKey = "offending_containers_usage"
	// OffendingPodKey names a pod whose pod-level request was exceeded.
	OffendingPodKey = "offending_pod"
	// OffendingPodUsageKey is that pod's usage.
	OffendingPodUsageKey = "offending_pod_usage"
	// StarvedResourceKey names the resource the node was low on.
	StarvedResourceKey = "starved_resource"
)

// evictionMessage explains an eviction and returns the event annotations,
// as the kubelet's evictionMessage: the starved resource, the threshold
// that was met and what was available, then every container (regular and
// init; ephemeral containers cannot request anything) using more than it
// requested.
func evictionMessage(res v1.ResourceName, pod *v1.Pod, stats statsFunc, thresholds []Threshold, obs map[Signal]SignalObservation) (string, map[string]string) {
	annotations := map[string]string{}
	message := fmt.Sprintf(nodeLowMessageFmt, res)
	if quantity, available, ok := thresholdMetInfo(res, thresholds, obs); ok {
		message += fmt.Sprintf(thresholdMetMessageFmt, &quantity, &available)
	}
	podStats, ok := stats(pod)
	if !ok {
		return message, annotations
	}
	if res == v1.ResourceMemory && resourcehelper.IsPodLevelResourcesSet(pod) {
		if req, ok := pod.Spec.Resources.Requests[res]; ok {
			usage := bytesQuantity(podStats.MemoryWorkingSetBytes)
			message += fmt.Sprintf(podMessageFmt, pod.Name, usage.String(), req.String(), res)
			annotations[OffendingPodKey] = pod.Name
			annotations[OffendingPodUsageKey] = usage.String()
		}
	}
	containers := append(append([]v1.Container(nil), pod.Spec.Containers...), pod.Spec.InitContainers...)
	var exceeded, usages []string
	for _, cs := range podStats.Containers {
		for _, c := range containers {
			if c.Name != cs.Name {
				continue
			}
			req := c.Resources.Requests[res]
			var usage *resource.Quantity
			switch res {
			case v1.ResourceEphemeralStorage:
				q := bytesQuantity(cs.Rootfs.UsedBytes + cs.Logs.UsedBytes)
				usage = &q
			case v1.ResourceMemory:
				q := bytesQuantity(cs.MemoryWorkingSetBytes)
				usage = &q
			}
			if usage != nil && usage.Cmp(req) > 0 {
				message += fmt.Sprintf(containerMessageFmt, c.Name, usage.String(), req.String(), res)
				exceeded = append(exceeded, c.Name)
				usages = append(usages, usage.String())
			}
			break
		}
	}
	annotations[OffendingContainersKey] = strings.Join(exceeded, ",")
	annotations[OffendingContainersUsageKey] = strings.Join(usages, ",")
	annotations[StarvedResourceKey] = string(res)
	return message, annotations
}

// thresholdMetInfo returns the first threshold quantity for the resource and
// the available value of its signal (the kubelet's getThresholdMetInfo).
func thresholdMetInfo(res v1.ResourceName, thresholds []Threshold, obs map[Signal]SignalObservation) (quantity, available resource.Quantity, ok bool) {
	for _, t := range thresholds {
		if signalToResource[t.Signal] != res {
			continue
		}
		if o, found := obs[t.Signal]; found {
			return thresholdQuantity(t.Value, o.Capacity), o.Available, true
		}
	}
	return resource.Quantity{}, resource.Quantity{}, false
}
