package kuberuntime

import (
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func sidecarPod() *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	return &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{
			{Name: "s1", RestartPolicy: &always},
			{Name: "init"}, // a plain init container orders nothing
			{Name: "s2", RestartPolicy: &always},
		},
		Containers: []v1.Container{{Name: "app"}, {Name: "web"}},
	}}
}

// Main containers stop first, then the sidecars from the last declared to
// the first (the kubelet's terminationOrdering).
func TestTerminationOrdering(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		running []string
		want    []string
	}{
		{desc: "sidecars after the main containers, in reverse order", running: []string{"app", "web", "s1", "s2"}, want: []string{"app", "web", "s2", "s1"}},
		{desc: "a stopped main container holds nothing back", running: []string{"app", "s1", "s2"}, want: []string{"app", "s2", "s1"}},
		{desc: "a stopped later sidecar holds nothing back", running: []string{"app", "s1"}, want: []string{"app", "s1"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			o := newTerminationOrdering(sidecarPod(), tc.running)
			var mu sync.Mutex
			var order []string
			stop := func(name string) {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				o.containerTerminated(name)
			}
			var wg sync.WaitGroup
			for _, name := range []string{"s1", "s2"} {
				if !slices.Contains(tc.running, name) {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					o.waitForTurn(name, 60)
					stop(name)
				}()
			}
			// The main containers stop in declaration order, one after the
			// other; the sidecars are all waiting meanwhile.
			for _, name := range []string{"app", "web"} {
				if slices.Contains(tc.running, name) {
					stop(name)
				}
			}
			wg.Wait()
			if !slices.Equal(order, tc.want) {
				t.Errorf("stop order %v, want %v", order, tc.want)
			}
		})
	}
}

// A sidecar waits no longer than its grace period.
func TestTerminationOrderingGraceBounds(t *testing.T) {
	o := newTerminationOrdering(sidecarPod(), []string{"app", "s1"})
	if waited := o.waitForTurn("s1", 1); waited < 0.9 {
		t.Errorf("waited %.2fs for a main container that never stopped, want the 1s grace", waited)
	}
	if waited := o.waitForTurn("s1", 0); waited != 0 {
		t.Errorf("waited %.2fs with no grace left", waited)
	}
}
