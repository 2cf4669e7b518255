package test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A restartable init container (sidecar) starts before the app container,
// keeps running beside it, and is restarted when it exits, while the app
// container is left alone: the kubelet's computeInitContainerActions.
func TestSidecarKeptRunningAndRestarted(t *testing.T) {
	s := startStack(t, stackOptions{backOffBase: 200 * time.Millisecond})
	uid := s.apply(`apiVersion: v1
kind: Pod
metadata:
  name: withsidecar
  annotations:
    fake.splitlet.dev/behavior.proxy: "after=1s exit=2"
spec:
  initContainers:
  - {name: proxy, image: busybox:1.36, restartPolicy: Always}
  containers:
  - {name: app, image: busybox:1.36}
`).GetPods()[0].GetUid()
	pod := s.waitPod("withsidecar", 15*time.Second, "Running with sidecar started", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && len(p.Status.InitContainerStatuses) == 1 &&
			p.Status.InitContainerStatuses[0].State.Running != nil
	})
	app := containerStatus(pod, "app")
	if app == nil || app.State.Running == nil {
		t.Fatalf("app status = %+v, want running beside the sidecar", app)
	}
	appID := app.ContainerID

	// The sidecar was created before the app container.
	var created []string
	for _, c := range s.containers(uid) {
		created = append(created, c.GetMetadata().GetName())
	}
	if len(created) < 2 || created[0] != "proxy" {
		t.Fatalf("containers in creation order = %v, want the sidecar first", created)
	}

	// The sidecar exits after 1 s with code 2; it is restarted under the
	// pod's restartPolicy Always, the app container is not touched.
	pod = s.waitPod("withsidecar", 20*time.Second, "sidecar restarted", func(p *v1.Pod) bool {
		if len(p.Status.InitContainerStatuses) != 1 {
			return false
		}
		sc := p.Status.InitContainerStatuses[0]
		return sc.RestartCount >= 1 && sc.State.Running != nil
	})
	sc := pod.Status.InitContainerStatuses[0]
	if sc.LastTerminationState.Terminated == nil || sc.LastTerminationState.Terminated.ExitCode != 2 {
		t.Errorf("sidecar lastState = %+v, want terminated with exit code 2", sc.LastTerminationState)
	}
	app = containerStatus(pod, "app")
	if app == nil || app.ContainerID != appID || app.RestartCount != 0 || app.State.Running == nil {
		t.Errorf("app status = %+v, want the same running container (%s) with no restart", app, appID)
	}
	if pod.Status.Phase != v1.PodRunning {
		t.Errorf("phase = %s while the sidecar restarts, want Running", pod.Status.Phase)
	}
	running := 0
	for _, c := range s.containers(uid) {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running++
		}
	}
	if running != 2 {
		t.Errorf("%d running containers in the runtime, want 2 (sidecar and app)", running)
	}
}
