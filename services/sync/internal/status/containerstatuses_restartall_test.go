package status

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// The kubelet tests' status builders (pkg/kubelet/kubelet_pods_test.go).
func kRunning(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func kTerminated(name string, code int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
}

func kRestartingAll(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name,
		State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: RestartingAllContainers, Message: messageRemovedByRestartAll}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: RestartingAllContainers, Message: messageRemovedByRestartAll, ExitCode: 137}},
	}
}

func withRestarts(s v1.ContainerStatus, n int32) v1.ContainerStatus {
	s.RestartCount = n
	return s
}

func withLast(s v1.ContainerStatus, last v1.ContainerState) v1.ContainerStatus {
	s.LastTerminationState = last
	return s
}

// TestConvertToAPIContainerStatusesRestartAll ports the cases of the
// kubelet's TestConvertToAPIContainerStatuses (v1.36.3) that
// RestartAllContainersOnContainerExits brings: restart counts that never go
// down, terminations carried over from the previous status, and containers
// removed by an in-place restart shown waiting with reason
// RestartingAllContainers. Fields the kubelet's test clears (container IDs,
// resources) are cleared here too.
func TestConvertToAPIContainerStatusesRestartAll(t *testing.T) {
	spec := v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{{Name: "containerA"}, {Name: "containerB"}}}
	inst := func(name, id string, state container.State, code, restarts int) *container.Status {
		return &container.Status{Name: name, ID: container.ContainerID{ID: id}, State: state, ExitCode: code, RestartCount: restarts}
	}
	for _, tc := range []struct {
		desc          string
		current       []*container.Status
		previous      []v1.ContainerStatus
		podRestarting bool
		want          []v1.ContainerStatus
	}{
		{desc: "no current status, keeping previous restartCount",
			previous: []v1.ContainerStatus{withRestarts(kTerminated("containerA", -1), 5), withRestarts(kTerminated("containerB", -1), 5)},
			want:     []v1.ContainerStatus{withRestarts(kTerminated("containerA", -1), 5), withRestarts(kTerminated("containerB", -1), 5)}},
		{desc: "currently running with lower restartCount; should keeping previous restartCount",
			current: []*container.Status{inst("containerA", "containerA", container.ContainerStateRunning, 0, 0),
				inst("containerB", "containerB", container.ContainerStateRunning, 0, 0)},
			previous: []v1.ContainerStatus{withRestarts(kTerminated("containerA", -1), 5), withRestarts(kTerminated("containerB", -1), 5)},
			want: []v1.ContainerStatus{
				withRestarts(withLast(kRunning("containerA"), v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: -1}}), 6),
				withRestarts(withLast(kRunning("containerB"), v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: -1}}), 6),
			}},
		{desc: "containerB dies and triggers RestartAllContainers in place",
			current:  []*container.Status{inst("containerA", "", container.ContainerStateRunning, 0, 0), inst("containerB", "", container.ContainerStateExited, 42, 0)},
			previous: []v1.ContainerStatus{kRunning("containerA"), kRunning("containerB")}, podRestarting: true,
			want: []v1.ContainerStatus{kRunning("containerA"), kTerminated("containerB", 42)}},
		{desc: "containerB dies and triggers RestartAllContainers in place, containerA killed",
			current:  []*container.Status{inst("containerA", "", container.ContainerStateExited, 137, 0)},
			previous: []v1.ContainerStatus{kRunning("containerA"), kTerminated("containerB", 42)}, podRestarting: true,
			want: []v1.ContainerStatus{kTerminated("containerA", 137), withRestarts(kRestartingAll("containerB"), 1)}},
		{desc: "containerB dies and triggers RestartAllContainers in place, containerA killed then removed",
			previous: []v1.ContainerStatus{kTerminated("containerA", 137), kTerminated("containerB", 42)}, podRestarting: true,
			want: []v1.ContainerStatus{withRestarts(kRestartingAll("containerA"), 1), withRestarts(kRestartingAll("containerB"), 1)}},
		{desc: "containerB dies and triggers RestartAllContainers in place, containerA killed and removed together",
			previous: []v1.ContainerStatus{kRunning("containerA"), kTerminated("containerB", 42)}, podRestarting: true,
			want: []v1.ContainerStatus{withRestarts(kRestartingAll("containerA"), 1), withRestarts(kRestartingAll("containerB"), 1)}},
		{desc: "containerB dies and triggers RestartAllContainers in place, containerA rerun",
			current:  []*container.Status{inst("containerA", "containerA-new", container.ContainerStateRunning, 0, 0)},
			previous: []v1.ContainerStatus{withRestarts(kRestartingAll("containerA"), 1), kTerminated("containerB", 42)}, podRestarting: true,
			want: []v1.ContainerStatus{
				withRestarts(withLast(kRunning("containerA"), kRestartingAll("x").LastTerminationState), 1),
				withRestarts(kRestartingAll("containerB"), 1),
			}},
		{desc: "containerB dies and triggers RestartAllContainers in place, containerA succeeded",
			current:  []*container.Status{inst("containerA", "", container.ContainerStateExited, 0, 0)},
			previous: []v1.ContainerStatus{withRestarts(kRunning("containerA"), 1), kTerminated("containerB", 42)}, podRestarting: true,
			want: []v1.ContainerStatus{withRestarts(kTerminated("containerA", 0), 1), withRestarts(kRestartingAll("containerB"), 1)}},
		{desc: "containerB dies and triggers RestartAllContainers in place, containerA failed",
			current:  []*container.Status{inst("containerA", "", container.ContainerStateExited, 1, 0)},
			previous: []v1.ContainerStatus{withRestarts(kRunning("containerA"), 1), kTerminated("containerB", 42)}, podRestarting: true,
			want: []v1.ContainerStatus{withRestarts(kTerminated("containerA", 1), 1), withRestarts(kRestartingAll("containerB"), 1)}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := &v1.Pod{Spec: spec}
			got := convertToAPIContainerStatuses(pod, &container.PodStatus{ContainerStatuses: tc.current}, tc.previous,
				spec.Containers, false, false, tc.podRestarting, nil, &rroSupport{})
			for i := range got {
				got[i].ContainerID, got[i].Resources, got[i].AllocatedResources = "", nil, nil
				if got[i].State.Terminated != nil {
					got[i].State.Terminated.ContainerID = ""
				}
			}
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("statuses:\n got %s\nwant %s", render(got), render(tc.want))
			}
		})
	}
}

func render(statuses []v1.ContainerStatus) string {
	out := ""
	for _, s := range statuses {
		out += fmt.Sprintf("\n  %s restarts=%d state=%+v last=%+v", s.Name, s.RestartCount, stateString(s.State), stateString(s.LastTerminationState))
	}
	return out
}

func stateString(s v1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return fmt.Sprintf("terminated(%d %s %q)", s.Terminated.ExitCode, s.Terminated.Reason, s.Terminated.Message)
	case s.Waiting != nil:
		return fmt.Sprintf("waiting(%s %q)", s.Waiting.Reason, s.Waiting.Message)
	}
	return "none"
}
