package preemption

import (
	"fmt"
	"math"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/splitlet/splitlet/internal/qos"
	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// requirement is an amount of one resource still to be freed, in the units
// of lifecycle.InsufficientResourceError.
type requirement struct {
	name     v1.ResourceName
	quantity int64
}

type requirementList []requirement

// String prints the list as the kubelet's admissionRequirementList.toString,
// which ends up in rejection messages.
func (l requirementList) String() string {
	var b strings.Builder
	b.WriteString("[")
	for _, r := range l {
		fmt.Fprintf(&b, "(res: %v, q: %d), ", r.name, r.quantity)
	}
	b.WriteString("]")
	return b.String()
}

// distance is how far stopping pod leaves each requirement from being met,
// as a fraction of the requirement, squared and summed, so every resource
// weighs the same whatever its unit.
func (l requirementList) distance(pod *v1.Pod) float64 {
	var d float64
	for _, r := range l {
		if left := float64(r.quantity - request(pod, r.name)); left > 0 {
			d += math.Pow(left/float64(r.quantity), 2)
		}
	}
	return d
}

// subtract returns what is still to be freed once pods are stopped.
func (l requirementList) subtract(pods ...*v1.Pod) requirementList {
	var out requirementList
	for _, r := range l {
		q := r.quantity
		for _, p := range pods {
			q -= request(p, r.name)
			if q <= 0 {
				break
			}
		}
		if q > 0 {
			out = append(out, requirement{name: r.name, quantity: q})
		}
	}
	return out
}

// request is what stopping pod frees of one resource: every pod frees one
// "pods", cpu is in millicores, the rest in units (the kubelet's
// resource.GetResourceRequest), with requests computed as for admission.
func request(pod *v1.Pod, name v1.ResourceName) int64 {
	if name == v1.ResourcePods {
		return 1
	}
	q, ok := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})[name]
	if !ok {
		return 0
	}
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// getPodsToPreempt is the kubelet's function of that name. It disturbs the
// best-protected class least: it frees as much as possible from BestEffort
// and Burstable pods before touching Guaranteed ones, and from BestEffort
// before Burstable, taking within each class the fewest pods, then the
// smallest ones.
func getPodsToPreempt(preemptor *v1.Pod, pods []*v1.Pod, needs requirementList) ([]*v1.Pod, error) {
	bestEffort, burstable, guaranteed := sortPodsByQOS(preemptor, pods)

	all := append(append(append([]*v1.Pod{}, bestEffort...), burstable...), guaranteed...)
	if short := needs.subtract(all...); len(short) > 0 {
		return nil, fmt.Errorf("%w: %v", ErrNoVictims, short)
	}
	// Guaranteed pods needed even if every BestEffort and Burstable pod went.
	guaranteedOut, err := byDistance(guaranteed, needs.subtract(append(append([]*v1.Pod{}, bestEffort...), burstable...)...))
	if err != nil {
		return nil, err
	}
	// Burstable pods needed even if every BestEffort pod and those
	// Guaranteed pods went.
	burstableOut, err := byDistance(burstable, needs.subtract(append(append([]*v1.Pod{}, bestEffort...), guaranteedOut...)...))
	if err != nil {
		return nil, err
	}
	// BestEffort pods for what is left.
	bestEffortOut, err := byDistance(bestEffort, needs.subtract(append(append([]*v1.Pod{}, burstableOut...), guaranteedOut...)...))
	if err != nil {
		return nil, err
	}
	return append(append(bestEffortOut, burstableOut...), guaranteedOut...), nil
}

// byDistance is the kubelet's getPodsToPreemptByDistance: repeatedly take the
// pod that leaves the least unmet, breaking ties with the smaller pod, until
// nothing is unmet. It works on a copy of pods.
func byDistance(pods []*v1.Pod, needs requirementList) ([]*v1.Pod, error) {
	pods = append([]*v1.Pod(nil), pods...)
	var out []*v1.Pod
	for len(needs) > 0 {
		if len(pods) == 0 {
			return nil, fmt.Errorf("%w: %v", ErrNoVictims, needs)
		}
		// A single requirement is at most 1 away, so this beats any pod.
		best, bestDist := 0, float64(len(needs)+1)
		for i, p := range pods {
			d := needs.distance(p)
			if d < bestDist || (d == bestDist && smallerResourceRequest(p, pods[best])) {
				best, bestDist = i, d
			}
		}
		needs = needs.subtract(pods[best])
		out = append(out, pods[best])
		pods[best] = pods[len(pods)-1]
		pods = pods[:len(pods)-1]
	}
	return out, nil
}

// sortPodsByQOS splits the pods the preemptor may preempt by QoS class.
func sortPodsByQOS(preemptor *v1.Pod, pods []*v1.Pod) (bestEffort, burstable, guaranteed []*v1.Pod) {
	for _, p := range pods {
		if !lifecycle.Preemptable(preemptor, p) {
			continue
		}
		switch qos.GetPodQOS(p) {
		case v1.PodQOSBestEffort:
			bestEffort = append(bestEffort, p)
		case v1.PodQOSBurstable:
			burstable = append(burstable, p)
		case v1.PodQOSGuaranteed:
			guaranteed = append(guaranteed, p)
		}
	}
	return bestEffort, burstable, guaranteed
}

// smallerResourceRequest compares memory, then cpu; equal pods count as
// smaller, as in the kubelet.
func smallerResourceRequest(a, b *v1.Pod) bool {
	for _, name := range [...]v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
		ra, rb := request(a, name), request(b, name)
		if ra != rb {
			return ra < rb
		}
	}
	return true
}
