package container

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerID(t *testing.T) {
	id := BuildContainerID("containerd", "abc")
	if got := id.String(); got != "containerd://abc" {
		t.Errorf("String() = %q", got)
	}
	if id.IsEmpty() {
		t.Error("IsEmpty() = true for a set ID")
	}
	if !(ContainerID{}).IsEmpty() {
		t.Error("IsEmpty() = false for the zero ID")
	}
}

func TestPodStatusFinders(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ps := &PodStatus{ContainerStatuses: []*Status{
		{ID: BuildContainerID("t", "a2"), Name: "a", State: ContainerStateRunning, CreatedAt: t0.Add(2 * time.Minute)},
		{ID: BuildContainerID("t", "b1"), Name: "b", State: ContainerStateExited, CreatedAt: t0.Add(time.Minute)},
		{ID: BuildContainerID("t", "a1"), Name: "a", State: ContainerStateExited, CreatedAt: t0},
	}}
	for _, tc := range []struct {
		desc   string
		name   string
		wantID string
	}{
		{desc: "latest instance wins", name: "a", wantID: "a2"},
		{desc: "single instance", name: "b", wantID: "b1"},
		{desc: "absent", name: "c"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			s := ps.FindContainerStatusByName(tc.name)
			switch {
			case tc.wantID == "" && s != nil:
				t.Errorf("found %v, want none", s.ID)
			case tc.wantID != "" && (s == nil || s.ID.ID != tc.wantID):
				t.Errorf("found %v, want %s", s, tc.wantID)
			}
		})
	}
	if s := ps.FindContainerStatusByID(BuildContainerID("t", "a1")); s == nil || s.State != ContainerStateExited {
		t.Errorf("FindContainerStatusByID(a1) = %v", s)
	}
	if s := ps.FindContainerStatusByID(BuildContainerID("other", "a1")); s != nil {
		t.Errorf("FindContainerStatusByID with another runtime type = %v, want nil", s)
	}
	if r := ps.GetRunningContainerStatuses(); len(r) != 1 || r[0].ID.ID != "a2" {
		t.Errorf("GetRunningContainerStatuses = %v", r)
	}
	var nilStatus *PodStatus
	if nilStatus.FindContainerStatusByName("a") != nil || nilStatus.GetRunningContainerStatuses() != nil {
		t.Error("nil PodStatus must find nothing")
	}
}

func TestSortNewestFirst(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ps := &PodStatus{
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{
			{Id: "old", CreatedAt: t0.UnixNano()},
			{Id: "new", CreatedAt: t0.Add(time.Hour).UnixNano()},
			{Id: "mid", CreatedAt: t0.Add(time.Minute).UnixNano()},
		},
		ContainerStatuses: []*Status{
			{ID: BuildContainerID("t", "a1"), Name: "a", CreatedAt: t0},
			{ID: BuildContainerID("t", "a3"), Name: "a", CreatedAt: t0.Add(2 * time.Minute)},
			{ID: BuildContainerID("t", "a2"), Name: "a", CreatedAt: t0.Add(time.Minute)},
		},
	}
	ps.SortNewestFirst()
	var sandboxes, containers []string
	for _, s := range ps.SandboxStatuses {
		sandboxes = append(sandboxes, s.Id)
	}
	for _, s := range ps.ContainerStatuses {
		containers = append(containers, s.ID.ID)
	}
	if got, want := sandboxes, []string{"new", "mid", "old"}; !equal(got, want) {
		t.Errorf("sandboxes = %v, want %v", got, want)
	}
	if got, want := containers, []string{"a3", "a2", "a1"}; !equal(got, want) {
		t.Errorf("containers = %v, want %v", got, want)
	}
	if s := ps.FindContainerStatusByName("a"); s.ID.ID != "a3" {
		t.Errorf("after sorting, latest of a = %s, want a3", s.ID.ID)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStateConversions(t *testing.T) {
	for _, tc := range []struct {
		desc string
		in   runtimeapi.ContainerState
		want State
	}{
		{desc: "created", in: runtimeapi.ContainerState_CONTAINER_CREATED, want: ContainerStateCreated},
		{desc: "running", in: runtimeapi.ContainerState_CONTAINER_RUNNING, want: ContainerStateRunning},
		{desc: "exited", in: runtimeapi.ContainerState_CONTAINER_EXITED, want: ContainerStateExited},
		{desc: "unknown", in: runtimeapi.ContainerState_CONTAINER_UNKNOWN, want: ContainerStateUnknown},
		{desc: "out of range", in: runtimeapi.ContainerState(42), want: ContainerStateUnknown},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := StateFromCRI(tc.in); got != tc.want {
				t.Errorf("StateFromCRI = %q, want %q", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		desc string
		in   runtimeapi.PodSandboxState
		want State
	}{
		{desc: "ready", in: runtimeapi.PodSandboxState_SANDBOX_READY, want: ContainerStateRunning},
		{desc: "not ready", in: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, want: ContainerStateExited},
		{desc: "out of range", in: runtimeapi.PodSandboxState(9), want: ContainerStateUnknown},
	} {
		t.Run("sandbox "+tc.desc, func(t *testing.T) {
			if got := SandboxToContainerState(tc.in); got != tc.want {
				t.Errorf("SandboxToContainerState = %q, want %q", got, tc.want)
			}
		})
	}
}
