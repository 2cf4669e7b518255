package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/cm"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

// podLevelPod has pod-level limits only (PodLevelResources): its one
// container has none of its own.
const podLevelPod = `apiVersion: v1
kind: Pod
metadata:
  name: pod-level
  namespace: splitlet-e2e
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 10
  resources:
    limits:
      cpu: 500m
      memory: 96Mi
  containers:
  - name: app
    image: IMAGE
    imagePullPolicy: IfNotPresent
    command: [sh, -c, "trap 'exit 0' TERM; while true; do sleep 1 & wait $!; done"]
`

// TestPodCgroupHasThePodsLimits: sync makes the pod's cgroup with the
// pod's limits before its sandbox, as the kubelet with cgroupsPerQOS
// (ResourceConfigForPod): here the pod-level 500m and 96Mi, which no
// container sets on its own cgroup, read from the host's cgroupfs with the
// sandbox inside; once the pod is deleted the cgroup goes. The BestEffort
// QoS cgroup has the minimum CPU shares.
func TestPodCgroupHasThePodsLimits(t *testing.T) {
	e := newEnv(t)
	if err := cm.Writable("/sys/fs/cgroup"); err != nil {
		t.Skipf("sync makes no pod cgroups where the cgroupfs cannot be written to: %v", err)
	}
	e.apply(t, strings.ReplaceAll(podLevelPod, "IMAGE", e.image))
	p := e.waitPod(t, "pod-level", 60*time.Second, "Running with app running", func(p *v1.Pod) bool {
		app := status(p, "app")
		return p.Status.Phase == v1.PodRunning && app != nil && app.State.Running != nil
	})
	name := kuberuntime.CgroupfsPodCgroupParent(p, p.Status.QOSClass)
	memory, cpu := filepath.Join("/sys/fs/cgroup", name), filepath.Join("/sys/fs/cgroup", name)
	files := map[string]string{"memory.max": "100663296", "cpu.max": "50000 100000"}
	if !cm.Unified("/sys/fs/cgroup") {
		memory, cpu = filepath.Join("/sys/fs/cgroup/memory", name), filepath.Join("/sys/fs/cgroup/cpu", name)
		files = map[string]string{"memory.limit_in_bytes": "100663296", "cpu.cfs_quota_us": "50000"}
	}
	for file, want := range files {
		dir := cpu
		if strings.HasPrefix(file, "memory") {
			dir = memory
		}
		b, err := os.ReadFile(filepath.Join(dir, file))
		if got := strings.TrimSpace(string(b)); err != nil || got != want {
			t.Errorf("%s/%s = %q (%v), want %s", dir, file, got, err, want)
		}
	}
	// The QoS tier BestEffort pods share has the minimum CPU weight (the
	// kubelet's qosContainerManager).
	qosFile, qosWant := "/sys/fs/cgroup/kubepods/besteffort/cpu.weight", "1"
	if !cm.Unified("/sys/fs/cgroup") {
		qosFile, qosWant = "/sys/fs/cgroup/cpu/kubepods/besteffort/cpu.shares", "2"
	}
	if b, err := os.ReadFile(qosFile); strings.TrimSpace(string(b)) != qosWant {
		t.Errorf("%s = %q (%v), want %s", qosFile, strings.TrimSpace(string(b)), err, qosWant)
	}
	entries, err := os.ReadDir(memory)
	sandboxInside := false
	for _, en := range entries {
		sandboxInside = sandboxInside || en.IsDir()
	}
	if err != nil || !sandboxInside {
		t.Errorf("%s holds no container cgroup (%v): the runtime did not put the pod in it", memory, err)
	}
	e.deletePod(t, "pod-level", 60*time.Second)
	waitFor(t, 30*time.Second, "the pod cgroup removed", func() (bool, string) {
		_, err := os.Stat(memory)
		return os.IsNotExist(err), fmt.Sprintf("%s: %v", memory, err)
	})
}

// resizedPod is Guaranteed at CPU and MEMORY.
const resizedPod = `apiVersion: v1
kind: Pod
metadata:
  name: resized
  namespace: splitlet-e2e
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 10
  containers:
  - name: app
    image: IMAGE
    imagePullPolicy: IfNotPresent
    resources:
      limits: {cpu: CPU, memory: MEMORY}
    command: [sh, -c, "trap 'exit 0' TERM; while true; do sleep 1 & wait $!; done"]
`

// TestPodCgroupFollowsResize: an in-place resize moves the pod cgroup's
// limits with the container's, up then down, without a restart. Up, the
// pod's CPU quota must be raised first: on cgroup v1 the kernel refuses a
// container quota above its parent's, so the other order fails the resize.
func TestPodCgroupFollowsResize(t *testing.T) {
	e := newEnv(t)
	if err := cm.Writable("/sys/fs/cgroup"); err != nil {
		t.Skipf("sync makes no pod cgroups where the cgroupfs cannot be written to: %v", err)
	}
	manifest := func(cpu, memory string) string {
		return strings.NewReplacer("IMAGE", e.image, "CPU", cpu, "MEMORY", memory).Replace(resizedPod)
	}
	e.apply(t, manifest("100m", "64Mi"))
	p := e.waitPod(t, "resized", 60*time.Second, "Running with app running", func(p *v1.Pod) bool {
		app := status(p, "app")
		return p.Status.Phase == v1.PodRunning && app != nil && app.State.Running != nil
	})
	name := kuberuntime.CgroupfsPodCgroupParent(p, p.Status.QOSClass)
	quotaFile, memoryFile := filepath.Join("/sys/fs/cgroup", name, "cpu.max"), filepath.Join("/sys/fs/cgroup", name, "memory.max")
	quota := func(q string) string { return q + " 100000" }
	if !cm.Unified("/sys/fs/cgroup") {
		quotaFile = filepath.Join("/sys/fs/cgroup/cpu", name, "cpu.cfs_quota_us")
		memoryFile = filepath.Join("/sys/fs/cgroup/memory", name, "memory.limit_in_bytes")
		quota = func(q string) string { return q }
	}
	read := func(file string) string {
		b, err := os.ReadFile(file)
		if err != nil {
			return err.Error()
		}
		return strings.TrimSpace(string(b))
	}
	for _, step := range []struct{ cpu, memory, wantQuota, wantMemory string }{
		{"100m", "64Mi", "10000", "67108864"},
		{"300m", "128Mi", "30000", "134217728"},
		{"200m", "96Mi", "20000", "100663296"},
	} {
		e.apply(t, manifest(step.cpu, step.memory))
		waitFor(t, 30*time.Second, "pod cgroup at "+step.cpu+" and "+step.memory, func() (bool, string) {
			q, m := read(quotaFile), read(memoryFile)
			return q == quota(step.wantQuota) && m == step.wantMemory, fmt.Sprintf("%s = %s, %s = %s", quotaFile, q, memoryFile, m)
		})
	}
	p = e.get(t, "resized")
	if app := status(p, "app"); app == nil || app.RestartCount != 0 || app.State.Running == nil {
		t.Errorf("the container restarted or stopped across the resizes: %+v", app)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodResizeInProgress && c.Reason == "Error" {
			t.Errorf("resize failed: %s", c.Message)
		}
	}
	e.deletePod(t, "resized", 60*time.Second)
}
