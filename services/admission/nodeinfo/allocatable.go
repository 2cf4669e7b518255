package nodeinfo

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// knownSignals are the eviction signals the kubelet accepts.
var knownSignals = map[string]bool{
	"memory.available":            true,
	"allocatableMemory.available": true,
	"nodefs.available":            true,
	"nodefs.inodesFree":           true,
	"imagefs.available":           true,
	"imagefs.inodesFree":          true,
	"containerfs.available":       true,
	"containerfs.inodesFree":      true,
	"pid.available":               true,
}

// reservedBySignal maps the signals that hold back capacity to the resource
// they hold back (the kubelet's hardEvictionReservation).
var reservedBySignal = map[string]v1.ResourceName{
	"memory.available": v1.ResourceMemory,
	"nodefs.available": v1.ResourceEphemeralStorage,
}

// hardEvictionReservation is how much of each resource the hard eviction
// thresholds keep free: a quantity as is, a percentage of capacity.
func hardEvictionReservation(thresholds map[string]string, capacity v1.ResourceList) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	for signal, value := range thresholds {
		if !knownSignals[signal] {
			return nil, fmt.Errorf("eviction threshold %q: unknown signal: %w", signal, errdefs.ErrInvalidArgument)
		}
		var q resource.Quantity
		if pct, ok := strings.CutSuffix(value, "%"); ok {
			f, err := strconv.ParseFloat(pct, 64)
			if err != nil || f < 0 || f > 100 {
				return nil, fmt.Errorf("eviction threshold %s=%q: want a percentage in [0, 100]: %w", signal, value, errdefs.ErrInvalidArgument)
			}
			name, reserves := reservedBySignal[signal]
			if !reserves {
				continue
			}
			c := capacity[name]
			q = *resource.NewQuantity(int64(float64(c.Value())*f/100), resource.BinarySI)
		} else {
			parsed, err := resource.ParseQuantity(value)
			if err != nil || parsed.Sign() < 0 {
				return nil, fmt.Errorf("eviction threshold %s=%q: want a non-negative quantity: %w", signal, value, errdefs.ErrInvalidArgument)
			}
			q = parsed
		}
		if name, reserves := reservedBySignal[signal]; reserves {
			out[name] = q
		}
	}
	return out, nil
}

// allocatableFrom is capacity minus system-reserved, kube-reserved and the
// hard eviction reservation, never below zero, with pre-allocated huge pages
// also taken out of memory because they cannot serve ordinary allocations
// (GetNodeAllocatableReservation and the MachineInfo node status setter).
func allocatableFrom(capacity, systemReserved, kubeReserved, eviction v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, c := range capacity {
		v := c.DeepCopy()
		for _, r := range []v1.ResourceList{systemReserved, kubeReserved, eviction} {
			if q, ok := r[name]; ok {
				v.Sub(q)
			}
		}
		if v.Sign() < 0 {
			v.Set(0)
		}
		out[name] = v
	}
	for name, c := range capacity {
		if !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
			continue
		}
		mem, ok := out[v1.ResourceMemory]
		if !ok {
			continue
		}
		mem.Sub(c)
		if mem.Sign() < 0 {
			mem.Set(0)
		}
		out[v1.ResourceMemory] = mem
	}
	return out
}
