package test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
)

const resizePod = `apiVersion: v1
kind: Pod
metadata:
  name: resize
spec:
  containers:
  - name: app
    image: busybox:1.36
    resources:
      requests: {cpu: CPU, memory: MEM}
      limits: {cpu: CPU, memory: MEM}
  - name: restarts
    image: busybox:1.36
    resizePolicy:
    - {resourceName: memory, restartPolicy: RestartContainer}
    resources:
      requests: {cpu: CPU, memory: MEM}
      limits: {cpu: CPU, memory: MEM}
`

func resizeManifest(cpu, mem string) string {
	return strings.NewReplacer("CPU", cpu, "MEM", mem).Replace(resizePod)
}

// resized says whether the pod's status shows every container at cpu (a
// quantity string) with no resize condition left.
func resized(p *v1.Pod, cpu string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
			return false
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Resources == nil || cs.Resources.Limits.Cpu().String() != cpu || cs.State.Running == nil {
			return false
		}
	}
	return len(p.Status.ContainerStatuses) == 2
}

// A PodService apply that changes cpu and memory resizes the running
// containers in place: the fake runtime gets UpdateContainerResources
// and reports the new values, the status follows, a container whose
// resizePolicy asks for it is restarted instead, and a sync restart keeps
// the allocation and restarts nothing.
func TestResizeInPlace(t *testing.T) {
	s := startStack(t, stackOptions{backOffBase: 100 * time.Millisecond})
	uid := s.apply(resizeManifest("100m", "64Mi")).GetPods()[0].GetUid()
	s.waitPod("resize", 30*time.Second, "running at 100m", func(p *v1.Pod) bool { return resized(p, "100m") })

	s.apply(resizeManifest("200m", "128Mi"))
	pod := s.waitPod("resize", 30*time.Second, "resized to 200m", func(p *v1.Pod) bool { return resized(p, "200m") })
	app, restarts := containerStatus(pod, "app"), containerStatus(pod, "restarts")
	if app.RestartCount != 0 || restarts.RestartCount != 1 {
		t.Errorf("restart counts app %d, restarts %d; want 0 (NotRequired) and 1 (RestartContainer for memory)",
			app.RestartCount, restarts.RestartCount)
	}
	for _, cs := range []*v1.ContainerStatus{app, restarts} {
		if got := cs.AllocatedResources.Memory().String(); got != "128Mi" {
			t.Errorf("%s allocatedResources memory = %s, want 128Mi", cs.Name, got)
		}
		if got := cs.Resources.Requests.Memory().String(); got != "128Mi" {
			t.Errorf("%s resources requests memory = %s, want 128Mi", cs.Name, got)
		}
	}
	var linux *runtimeapi.LinuxContainerResources
	for _, c := range s.containers(uid) {
		if c.GetMetadata().GetName() == "app" {
			linux = c.GetResources().GetLinux()
		}
	}
	if linux.GetCpuQuota() != 20000 || linux.GetCpuShares() != 204 || linux.GetMemoryLimitInBytes() != 128<<20 {
		t.Errorf("app runs with %+v, want quota 20000, 204 shares, 128Mi", linux)
	}
	// Kept off swap (the kubelet's NoSwap) through the in-place update as
	// at creation ("restarts" was created again at 128Mi), as this host's
	// swap control says.
	for _, c := range s.containers(uid) {
		if c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue // the instance of "restarts" before the resize
		}
		l := c.GetResources().GetLinux()
		switch kuberuntime.DetectSwapController("/sys/fs/cgroup", "/proc/self/cgroup") {
		case kuberuntime.SwapControllerV1:
			if l.GetMemorySwapLimitInBytes() != 128<<20 {
				t.Errorf("%s: memory+swap limit %d, want the memory limit 128Mi", c.GetMetadata().GetName(), l.GetMemorySwapLimitInBytes())
			}
		case kuberuntime.SwapControllerV2:
			if l.GetUnified()["memory.swap.max"] != "0" {
				t.Errorf("%s: unified %v, want memory.swap.max 0", c.GetMetadata().GetName(), l.GetUnified())
			}
		default:
			if l.GetMemorySwapLimitInBytes() != 0 || len(l.GetUnified()) != 0 {
				t.Errorf("%s: swap set (%+v) on a node without swap control", c.GetMetadata().GetName(), l)
			}
		}
	}

	s.restartSync()
	s.apply(resizeManifest("200m", "128Mi"))
	pod = s.waitPod("resize", 30*time.Second, "still at 200m after a sync restart", func(p *v1.Pod) bool { return resized(p, "200m") })
	if app, restarts := containerStatus(pod, "app"), containerStatus(pod, "restarts"); app.RestartCount != 0 || restarts.RestartCount != 1 {
		t.Errorf("after a sync restart: restart counts app %d, restarts %d; want 0 and 1", app.RestartCount, restarts.RestartCount)
	}
}

// A resize to values the cgroups cannot tell apart (2m and 1m are both 2
// shares, 10m and 5m both a 1 ms quota) still completes: the status shows
// the new allocation and PodResizeInProgress goes away although nothing
// else in the status changes (the conformance spec "resize with
// equivalents").
func TestResizeWithEquivalents(t *testing.T) {
	s := startStack(t, stackOptions{})
	manifest := func(req, lim string) string {
		return `apiVersion: v1
kind: Pod
metadata:
  name: equivalents
spec:
  containers:
  - name: c1
    image: busybox:1.36
    resources:
      requests: {cpu: ` + req + `}
      limits: {cpu: ` + lim + `}
`
	}
	s.apply(manifest("2m", "10m"))
	s.waitPod("equivalents", 30*time.Second, "running at 10m", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && resizedTo(p, "2m", "10m")
	})
	s.apply(manifest("1m", "5m"))
	s.waitPod("equivalents", 30*time.Second, "resized to 1m/5m", func(p *v1.Pod) bool { return resizedTo(p, "1m", "5m") })
}

// resizedTo says whether the pod's only container reports the cpu request
// and limit, running, with no resize condition.
func resizedTo(p *v1.Pod, req, lim string) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
			return false
		}
	}
	cs := p.Status.ContainerStatuses[0]
	return cs.State.Running != nil && cs.Resources != nil &&
		cs.Resources.Requests.Cpu().String() == req && cs.Resources.Limits.Cpu().String() == lim
}
