package kuberuntime

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// terminationOrdering holds back the stop of a pod's sidecars (restartable
// init containers) until its main containers have stopped, and each sidecar
// until the sidecars declared after it have, so a main container's preStop
// hook and shutdown can still use the sidecars. Matches the kubelet's
// terminationOrdering (kuberuntime_termination_order.go), which
// killContainersWithSyncResult builds for pods with a sidecar.
type terminationOrdering struct {
	mu sync.Mutex
	// terminated is closed when the named container has stopped.
	terminated map[string]chan struct{}
	// prereqs are what the named container waits for.
	prereqs map[string][]chan struct{}
}

// newTerminationOrdering orders the stop of running, the names of the pod's
// containers being stopped; a container not running is taken as stopped.
func newTerminationOrdering(pod *v1.Pod, running []string) *terminationOrdering {
	o := &terminationOrdering{terminated: map[string]chan struct{}{}, prereqs: map[string][]chan struct{}{}}
	isRunning := map[string]bool{}
	for _, name := range running {
		isRunning[name] = true
	}
	channel := func(name string) chan struct{} {
		ch := make(chan struct{})
		if !isRunning[name] {
			close(ch)
		}
		o.terminated[name] = ch
		return ch
	}
	var mains []chan struct{}
	for _, c := range pod.Spec.Containers {
		mains = append(mains, channel(c.Name))
	}
	// Sidecars from the last declared to the first: each waits for every
	// main container and for the sidecar declared after it.
	var later chan struct{}
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		ic := &pod.Spec.InitContainers[i]
		ch := channel(ic.Name)
		if !isSidecar(pod, ic) {
			continue
		}
		o.prereqs[ic.Name] = append(o.prereqs[ic.Name], mains...)
		if later != nil {
			o.prereqs[ic.Name] = append(o.prereqs[ic.Name], later)
		}
		later = ch
	}
	return o
}

// waitForTurn blocks until name may stop or grace seconds have passed, and
// returns the seconds it waited.
func (o *terminationOrdering) waitForTurn(name string, grace int64) float64 {
	if grace <= 0 {
		return 0
	}
	start := time.Now()
	deadline := time.NewTimer(time.Duration(grace) * time.Second)
	defer deadline.Stop()
	for _, ch := range o.prereqs[name] {
		select {
		case <-ch:
		case <-deadline.C:
			return time.Since(start).Seconds()
		}
	}
	return time.Since(start).Seconds()
}

// containerTerminated says name has stopped, releasing who waits for it.
func (o *terminationOrdering) containerTerminated(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch, ok := o.terminated[name]; ok {
		close(ch)
		delete(o.terminated, name)
	}
}
