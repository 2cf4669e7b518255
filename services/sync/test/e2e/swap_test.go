package e2e

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// noSwapPod has a 64 MiB memory limit.
const noSwapPod = `apiVersion: v1
kind: Pod
metadata:
  name: no-swap
  namespace: splitlet-e2e
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 10
  containers:
  - name: app
    image: IMAGE
    imagePullPolicy: IfNotPresent
    resources:
      limits:
        memory: 64Mi
    command: [sh, -c, "trap 'exit 0' TERM; while true; do sleep 1 & wait $!; done"]
`

// TestContainersKeptOffSwap: the kubelet's default swap behaviour
// (NoSwap) on a node that can limit swap: a container's memory+swap limit
// is its memory limit on cgroup v1, its memory.swap.max 0 on v2, read
// inside the container from its own cgroup. containerd's CRI sets the
// same for a container with a memory limit when sync sends no swap limit
// (containerd/containerd#7838), so on cgroup v1 this shows the outcome on
// a real runtime, not that sync sent it: TestResizeInPlace (../resize_test.go,
// the fake runtime) checks the CRI request. Skips where the node has no
// swap control (cgroup v1 without swap accounting).
func TestContainersKeptOffSwap(t *testing.T) {
	e := newEnv(t)
	var file, want string
	switch kuberuntime.DetectSwapController("/sys/fs/cgroup", "/proc/self/cgroup") {
	case kuberuntime.SwapControllerV1:
		file, want = "/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes", "67108864"
	case kuberuntime.SwapControllerV2:
		file, want = "/sys/fs/cgroup/memory.swap.max", "0"
	default:
		t.Skip("this node has no cgroup swap control (cgroup v1 without swap accounting): nothing to limit")
	}
	e.apply(t, strings.ReplaceAll(noSwapPod, "IMAGE", e.image))
	e.waitPod(t, "no-swap", 60*time.Second, "Running with app running", func(p *v1.Pod) bool {
		app := status(p, "app")
		return p.Status.Phase == v1.PodRunning && app != nil && app.State.Running != nil
	})
	m := e.execSync(t, "no-swap", "app", "cat", file)
	if got := strings.TrimSpace(string(m.GetStdout())); m.GetExitCode() != 0 || got != want {
		t.Errorf("%s reads %q (exit %d, stderr %q), want %s", file, got, m.GetExitCode(), m.GetStderr(), want)
	}
	e.deletePod(t, "no-swap", 60*time.Second)
}
