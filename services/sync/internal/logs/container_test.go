package logs

import (
	"errors"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
)

func TestContainerLogID(t *testing.T) {
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	lastTerm := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://old"}}
	for _, tc := range []struct {
		desc     string
		status   v1.ContainerStatus
		name     string
		previous bool
		want     string
		wantErr  error
		wantMsg  string
	}{
		{desc: "running: the current instance", status: v1.ContainerStatus{Name: "app", ContainerID: "containerd://cur", State: running}, want: "cur"},
		{desc: "previous: the last terminated instance", status: v1.ContainerStatus{Name: "app", ContainerID: "containerd://cur", State: running, LastTerminationState: lastTerm}, previous: true, want: "old"},
		{desc: "previous without one", status: v1.ContainerStatus{Name: "app", ContainerID: "containerd://cur", State: running}, previous: true,
			wantErr: errdefs.ErrNotFound, wantMsg: `previous terminated container "app" in pod "p" not found`},
		{desc: "terminated: its own instance", status: v1.ContainerStatus{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://done"}}}, want: "done"},
		{desc: "terminated without an ID: the one before", status: v1.ContainerStatus{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}, LastTerminationState: lastTerm}, want: "old"},
		{desc: "waiting after a crash: the crashed instance", status: v1.ContainerStatus{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, LastTerminationState: lastTerm}, want: "old"},
		{desc: "waiting on a pull", status: v1.ContainerStatus{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}},
			wantErr: errdefs.ErrFailedPrecondition, wantMsg: `container "app" in pod "p" is waiting to start: trying and failing to pull image`},
		{desc: "no state yet", status: v1.ContainerStatus{Name: "app"}, wantErr: errdefs.ErrFailedPrecondition, wantMsg: `container "app" in pod "p" is waiting to start - no logs yet`},
		{desc: "no status for the container", status: v1.ContainerStatus{Name: "other", State: running}, wantErr: errdefs.ErrNotFound, wantMsg: `container "app" in pod "p" is not available`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			st := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{tc.status}}
			got, err := ContainerLogID("p", st, "app", tc.previous)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.HasPrefix(err.Error(), tc.wantMsg) {
					t.Fatalf("err %v, want %v starting %q", err, tc.wantErr, tc.wantMsg)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
