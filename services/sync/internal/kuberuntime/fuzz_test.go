package kuberuntime

import (
	"context"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// FuzzComputePodActions: over any mix of restart policy, sandbox state,
// pod shape (one to three regular containers, up to four init containers,
// any of them sidecars) and container states (running, exited with a
// code, never started), computePodActions never panics and only names containers the pod has,
// each at most once, and asks for a new sandbox only together with a kill.
func FuzzComputePodActions(f *testing.F) {
	f.Add(byte(0), true, byte(2), byte(0), []byte{0, 1, 2})
	f.Add(byte(1), false, byte(2), byte(0), []byte{3, 3, 3})
	f.Add(byte(2), true, byte(2), byte(0), []byte{255, 0, 17})
	// Two init containers, the second a sidecar past the one regular
	// container: sync panicked on this shape once.
	f.Add(byte(0), true, byte(6), byte(2), []byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, policy byte, sandboxReady bool, shape, sidecars byte, states []byte) {
		pod := makeTestPod()
		pod.Spec.RestartPolicy = []v1.RestartPolicy{v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}[int(policy)%3]
		pod.Spec.Containers = pod.Spec.Containers[:1+int(shape)%3]
		for i := range int(shape/3) % 5 {
			name := fmt.Sprintf("init%d", i)
			if sidecars&(1<<i) != 0 {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, sidecar(name))
			} else {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, initContainer(name))
			}
		}
		ps := makeTestPodStatus(pod)
		if !sandboxReady {
			ps.SandboxStatuses = []*runtimeapi.PodSandboxStatus{notReadySandbox(testSandboxID, uint32(policy))}
		}
		var statuses []*container.Status
		for i, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
			if i >= len(states) {
				break
			}
			switch s := states[i]; {
			case s%3 == 0:
				statuses = append(statuses, running(c.Name))
			case s%3 == 1:
				statuses = append(statuses, exited(c.Name, int(s/3)))
			}
		}
		ps.ContainerStatuses = statuses
		actions := computePodActions(context.Background(), pod, ps, &fakeProbes{}, false)
		if actions.CreateSandbox && !actions.KillPod {
			t.Fatalf("a new sandbox without killing the pod: %s", actions)
		}
		for name, list := range map[string][]int{
			"containers": actions.ContainersToStart, "init containers": actions.InitContainersToStart, "ephemeral": actions.EphemeralContainersToStart,
		} {
			limit := map[string]int{"containers": len(pod.Spec.Containers), "init containers": len(pod.Spec.InitContainers), "ephemeral": len(pod.Spec.EphemeralContainers)}[name]
			sorted := slices.Clone(list)
			slices.Sort(sorted)
			if len(slices.Compact(sorted)) != len(list) {
				t.Fatalf("%s to start repeat an index: %v", name, list)
			}
			for _, i := range list {
				if i < 0 || i >= limit {
					t.Fatalf("%s to start name index %d of %d", name, i, limit)
				}
			}
		}
	})
}
