package printers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var now = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func running(name string, ready bool, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Minute)}}}
}

func waiting(name, reason string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func terminated(name, reason string, code, signal int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, Signal: signal}}}
}

func withLastTermination(cs corev1.ContainerStatus, finished time.Duration) corev1.ContainerStatus {
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: ago(finished)}
	return cs
}

func started(cs corev1.ContainerStatus) corev1.ContainerStatus {
	t := true
	cs.Started = &t
	return cs
}

func containers(names ...string) []corev1.Container {
	var cs []corev1.Container
	for _, n := range names {
		cs = append(cs, corev1.Container{Name: n, Image: "busybox"})
	}
	return cs
}

func sidecars(names ...string) []corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	cs := containers(names...)
	for i := range cs {
		cs[i].RestartPolicy = &always
	}
	return cs
}

func condition(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
	return corev1.PodCondition{Type: t, Status: s}
}

func TestNewPodRow(t *testing.T) {
	deleted := ago(10 * time.Second)
	tests := []struct {
		desc         string
		pod          corev1.Pod
		wantReady    string
		wantStatus   string
		wantRestarts string
	}{
		{
			desc:      "pending with no statuses shows the phase",
			pod:       corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodPending}},
			wantReady: "0/1", wantStatus: "Pending", wantRestarts: "0",
		},
		{
			desc: "running and ready",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{running("a", true, 0)}}},
			wantReady: "1/1", wantStatus: "Running", wantRestarts: "0",
		},
		{
			desc: "running but one of two containers not ready",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a", "b")}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{running("a", true, 0), running("b", false, 0)}}},
			wantReady: "1/2", wantStatus: "Running", wantRestarts: "0",
		},
		{
			desc: "container waiting ContainerCreating",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodPending,
				ContainerStatuses: []corev1.ContainerStatus{waiting("a", "ContainerCreating", 0)}}},
			wantReady: "0/1", wantStatus: "ContainerCreating", wantRestarts: "0",
		},
		{
			desc: "CrashLoopBackOff with restarts and the last restart's age",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{withLastTermination(waiting("a", "CrashLoopBackOff", 4), 5*time.Minute)}}},
			wantReady: "0/1", wantStatus: "CrashLoopBackOff", wantRestarts: "4 (5m ago)",
		},
		{
			desc: "restarts without a known last termination time have no age",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{running("a", true, 3)}}},
			wantReady: "1/1", wantStatus: "Running", wantRestarts: "3",
		},
		{
			desc: "ImagePullBackOff",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodPending,
				ContainerStatuses: []corev1.ContainerStatus{waiting("a", "ImagePullBackOff", 0)}}},
			wantReady: "0/1", wantStatus: "ImagePullBackOff", wantRestarts: "0",
		},
		{
			desc: "succeeded pod shows the terminated reason Completed",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded,
				ContainerStatuses: []corev1.ContainerStatus{terminated("a", "Completed", 0, 0)}}},
			wantReady: "0/1", wantStatus: "Completed", wantRestarts: "0",
		},
		{
			desc: "failed container with reason Error",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodFailed,
				ContainerStatuses: []corev1.ContainerStatus{terminated("a", "Error", 1, 0)}}},
			wantReady: "0/1", wantStatus: "Error", wantRestarts: "0",
		},
		{
			desc: "terminated without reason by a signal",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodFailed,
				ContainerStatuses: []corev1.ContainerStatus{terminated("a", "", 137, 9)}}},
			wantReady: "0/1", wantStatus: "Signal:9", wantRestarts: "0",
		},
		{
			desc: "terminated without reason or signal shows the exit code",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodFailed,
				ContainerStatuses: []corev1.ContainerStatus{terminated("a", "", 3, 0)}}},
			wantReady: "0/1", wantStatus: "ExitCode:3", wantRestarts: "0",
		},
		{
			desc: "OOMKilled",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{terminated("a", "OOMKilled", 137, 0)}}},
			wantReady: "0/1", wantStatus: "OOMKilled", wantRestarts: "0",
		},
		{
			desc: "first container's reason wins over later ones",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a", "b")}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{waiting("a", "CrashLoopBackOff", 1), terminated("b", "Error", 1, 0)}}},
			wantReady: "0/2", wantStatus: "CrashLoopBackOff", wantRestarts: "1",
		},
		{
			desc: "Completed container beside a running one with PodReady reads Running",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a", "b")}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions:        []corev1.PodCondition{condition(corev1.PodReady, corev1.ConditionTrue)},
				ContainerStatuses: []corev1.ContainerStatus{terminated("a", "Completed", 0, 0), running("b", true, 0)}}},
			wantReady: "1/2", wantStatus: "Running", wantRestarts: "0",
		},
		{
			desc: "Completed container beside a running one without PodReady reads NotReady",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a", "b")}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{terminated("a", "Completed", 0, 0), running("b", true, 0)}}},
			wantReady: "1/2", wantStatus: "NotReady", wantRestarts: "0",
		},
		{
			desc: "first init container running: Init:0/2",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("i1", "i2"), Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{running("i1", false, 0), waiting("i2", "PodInitializing", 0)},
				ContainerStatuses:     []corev1.ContainerStatus{waiting("a", "PodInitializing", 0)}}},
			wantReady: "0/1", wantStatus: "Init:0/2", wantRestarts: "0",
		},
		{
			desc: "second init container after the first completed: Init:1/2",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("i1", "i2"), Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{terminated("i1", "Completed", 0, 0), running("i2", false, 0)}}},
			wantReady: "0/1", wantStatus: "Init:1/2", wantRestarts: "0",
		},
		{
			desc: "init container failing with a reason, its restarts counted",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("i1"), Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{func() corev1.ContainerStatus {
					cs := terminated("i1", "Error", 1, 0)
					cs.RestartCount = 2
					cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{FinishedAt: ago(2 * time.Minute)}
					return cs
				}()}}},
			wantReady: "0/1", wantStatus: "Init:Error", wantRestarts: "2 (2m ago)",
		},
		{
			desc: "init container killed by a signal",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("i1"), Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{terminated("i1", "", 137, 9)}}},
			wantReady: "0/1", wantStatus: "Init:Signal:9", wantRestarts: "0",
		},
		{
			desc: "init container exited non-zero without reason",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("i1"), Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{terminated("i1", "", 2, 0)}}},
			wantReady: "0/1", wantStatus: "Init:ExitCode:2", wantRestarts: "0",
		},
		{
			desc: "init container in CrashLoopBackOff",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: containers("i1"), Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{waiting("i1", "CrashLoopBackOff", 5)}}},
			wantReady: "0/1", wantStatus: "Init:CrashLoopBackOff", wantRestarts: "5",
		},
		{
			desc: "started and ready sidecar counts in READY and does not block init",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: sidecars("proxy"), Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				Conditions:            []corev1.PodCondition{condition(corev1.PodInitialized, corev1.ConditionTrue)},
				InitContainerStatuses: []corev1.ContainerStatus{started(running("proxy", true, 0))},
				ContainerStatuses:     []corev1.ContainerStatus{running("a", true, 0)}}},
			wantReady: "2/2", wantStatus: "Running", wantRestarts: "0",
		},
		{
			desc: "sidecar not started yet holds initialization",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: sidecars("proxy"), Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{running("proxy", false, 0)}}},
			wantReady: "0/2", wantStatus: "Init:0/1", wantRestarts: "0",
		},
		{
			desc: "sidecar restarts count after initialization, regular init restarts do not",
			pod: corev1.Pod{Spec: corev1.PodSpec{InitContainers: append(containers("setup"), sidecars("proxy")...), Containers: containers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning,
					Conditions: []corev1.PodCondition{condition(corev1.PodInitialized, corev1.ConditionTrue)},
					InitContainerStatuses: []corev1.ContainerStatus{
						func() corev1.ContainerStatus {
							cs := terminated("setup", "Completed", 0, 0)
							cs.RestartCount = 7
							return cs
						}(),
						withLastTermination(started(running("proxy", true, 2)), 3*time.Minute)},
					ContainerStatuses: []corev1.ContainerStatus{running("a", true, 1)}}},
			wantReady: "2/2", wantStatus: "Running", wantRestarts: "3 (3m ago)",
		},
		{
			desc: "deletionTimestamp on a running pod: Terminating",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}, Spec: corev1.PodSpec{Containers: containers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("a", true, 0)}}},
			wantReady: "1/1", wantStatus: "Terminating", wantRestarts: "0",
		},
		{
			desc: "deletionTimestamp on a finished pod keeps its status",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}, Spec: corev1.PodSpec{Containers: containers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{terminated("a", "Completed", 0, 0)}}},
			wantReady: "0/1", wantStatus: "Completed", wantRestarts: "0",
		},
		{
			desc: "NodeLost with deletionTimestamp: Unknown",
			pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}, Spec: corev1.PodSpec{Containers: containers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Reason: "NodeLost", ContainerStatuses: []corev1.ContainerStatus{running("a", true, 0)}}},
			wantReady: "1/1", wantStatus: "Unknown", wantRestarts: "0",
		},
		{
			desc: "status.reason overrides the phase (Evicted)",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}},
			wantReady: "0/1", wantStatus: "Evicted", wantRestarts: "0",
		},
		{
			desc: "scheduling gated",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a")}, Status: corev1.PodStatus{Phase: corev1.PodPending,
				Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}}},
			wantReady: "0/1", wantStatus: "SchedulingGated", wantRestarts: "0",
		},
		{
			desc: "restarts summed over containers, newest termination shown",
			pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("a", "b")}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{
					withLastTermination(running("a", true, 2), time.Hour),
					withLastTermination(running("b", true, 1), 90*time.Second)}}},
			wantReady: "2/2", wantStatus: "Running", wantRestarts: "3 (90s ago)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			tc.pod.Name = "p"
			tc.pod.CreationTimestamp = ago(2 * time.Hour)
			row := NewPodRow(&tc.pod, now)
			if row.Ready != tc.wantReady || row.Status != tc.wantStatus || row.Restarts != tc.wantRestarts {
				t.Errorf("got READY %q STATUS %q RESTARTS %q, want %q %q %q",
					row.Ready, row.Status, row.Restarts, tc.wantReady, tc.wantStatus, tc.wantRestarts)
			}
			if row.Age != "120m" {
				t.Errorf("AGE = %q, want 120m (HumanDuration of 2h)", row.Age)
			}
		})
	}
}

func TestSinceUnknown(t *testing.T) {
	if got := Since(time.Time{}, now); got != "<unknown>" {
		t.Errorf("Since(zero) = %q, want <unknown>", got)
	}
}

func TestWideColumns(t *testing.T) {
	tests := []struct {
		desc string
		pod  corev1.Pod
		want []string
	}{
		{
			desc: "no IP, node or gates",
			pod:  corev1.Pod{},
			want: []string{"<none>", "<none>", "<none>", "<none>"},
		},
		{
			desc: "first pod IP, node, nominated node and one of two gates true",
			pod: corev1.Pod{
				Spec: corev1.PodSpec{NodeName: "node-1", ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "g1"}, {ConditionType: "g2"}}},
				Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.0.0.7"}, {IP: "fd00::7"}}, NominatedNodeName: "node-2",
					Conditions: []corev1.PodCondition{{Type: "g1", Status: corev1.ConditionTrue}, {Type: "g2", Status: corev1.ConditionFalse}}},
			},
			want: []string{"10.0.0.7", "node-1", "node-2", "1/2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			cells := NewPodRow(&tc.pod, now).Cells(TableOptions{Wide: true})
			got := cells[5:]
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Errorf("wide cells = %q, want %q", got, tc.want)
					break
				}
			}
		})
	}
}
