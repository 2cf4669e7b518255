package status

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// t0 is the fixed origin of every test timeline.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fixedClock is a hand-written clock that reads a settable time.
type fixedClock struct{ now time.Time }

var _ Clock = (*fixedClock)(nil)

func (c *fixedClock) Now() time.Time { return c.now }

// fakeReasons is a hand-written ReasonLookup over a map by container name.
type fakeReasons map[string]WaitingReason

var _ ReasonLookup = fakeReasons(nil)

func (f fakeReasons) Get(_ types.UID, name string) (WaitingReason, bool) {
	r, ok := f[name]
	return r, ok
}

// probeMap answers readiness results per container ID string; as Probes,
// it is a probe manager that has those results and no other.
type probeMap map[string]bool

var _ Probes = probeMap(nil)

func (m probeMap) UpdatePodStatus(pod *v1.Pod, s *v1.PodStatus) {
	ApplyProbeResults(pod, s, m.fn(), nil)
}

func (m probeMap) fn() ProbeResultFunc {
	return func(id container.ContainerID) (bool, bool) {
		r, ok := m[id.String()]
		return r, ok
	}
}

func newPod(policy v1.RestartPolicy, containers ...string) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{RestartPolicy: policy},
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: c, Image: "img-" + c})
	}
	return pod
}

func withInit(pod *v1.Pod, names ...string) *v1.Pod {
	for _, n := range names {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: n, Image: "img-" + n})
	}
	return pod
}

func withSidecar(pod *v1.Pod, names ...string) *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	for _, n := range names {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers,
			v1.Container{Name: n, Image: "img-" + n, RestartPolicy: &always})
	}
	return pod
}

// rt builds the runtime's view: one ready pod-network sandbox created at t0
// with IP 10.0.0.5, and the given instances.
func rt(instances ...*container.Status) *container.PodStatus {
	return &container.PodStatus{
		ID:  "uid-1",
		IPs: []string{"10.0.0.5"},
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{{
			Id:        "sb1",
			State:     runtimeapi.PodSandboxState_SANDBOX_READY,
			CreatedAt: t0.UnixNano(),
			Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.5"},
			Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{
				Options: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD},
			}},
		}},
		ContainerStatuses: instances,
	}
}

// running is an instance of name started at t0+at, attempt restarts.
func running(name, id string, at time.Duration, restarts int) *container.Status {
	return &container.Status{
		ID: container.BuildContainerID("containerd", id), Name: name, State: container.ContainerStateRunning,
		CreatedAt: t0.Add(at), StartedAt: t0.Add(at + time.Second), Image: "img-" + name,
		ImageRef: "sha256:" + name, RestartCount: restarts,
	}
}

// exited is an instance of name that ran from t0+at for a minute.
func exited(name, id string, at time.Duration, code, restarts int) *container.Status {
	s := running(name, id, at, restarts)
	s.State = container.ContainerStateExited
	s.ExitCode = code
	s.FinishedAt = t0.Add(at + time.Minute)
	s.Reason = "Completed"
	if code != 0 {
		s.Reason = "Error"
	}
	return s
}

func withState(s *container.Status, state container.State) *container.Status {
	s.State = state
	return s
}

// API container status builders for getPhase tables.
func csRunning(name string) v1.ContainerStatus {
	t := true
	return v1.ContainerStatus{Name: name, Started: &t, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func csRunningNotStarted(name string) v1.ContainerStatus {
	f := false
	return v1.ContainerStatus{Name: name, Started: &f, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func csExited(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

func csWaiting(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
}

// csRestarting is waiting after a previous run that exited with code.
func csRestarting(name string, code int32) v1.ContainerStatus {
	s := csWaiting(name)
	s.State.Waiting.Reason = "CrashLoopBackOff"
	s.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: code}
	return s
}

func findStatus(statuses []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

func condition(s v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	return findCondition(s.Conditions, t)
}

func typesUID(s string) types.UID { return types.UID(s) }
