package syncloop

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/events"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/source"
)

func TestActiveDeadlineHandler(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	started := func(ago time.Duration) *v1.PodStatus {
		return &v1.PodStatus{StartTime: &metav1.Time{Time: now.Add(-ago)}}
	}
	const event = "Normal DeadlineExceeded Pod was active on the node longer than the specified deadline"
	for _, tc := range []struct {
		desc      string
		deadline  *int64
		status    *v1.PodStatus // the last generated status; nil: none
		podStatus v1.PodStatus  // the pod's own
		want      bool
	}{
		{desc: "no deadline", status: started(time.Hour)},
		{desc: "not started", deadline: new(int64(1)), status: &v1.PodStatus{}},
		{desc: "before the deadline", deadline: new(int64(30)), status: started(29 * time.Second)},
		{desc: "at the deadline", deadline: new(int64(30)), status: started(30 * time.Second), want: true},
		{desc: "past the deadline", deadline: new(int64(30)), status: started(time.Minute), want: true},
		{desc: "without a generated status the pod's own counts", deadline: new(int64(30)),
			podStatus: *started(time.Minute), want: true},
		{desc: "the generated status wins over the pod's", deadline: new(int64(30)),
			status: started(time.Second), podStatus: *started(time.Minute)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: v1.PodSpec{ActiveDeadlineSeconds: tc.deadline}, Status: tc.podStatus}
			rec := &events.FakeRecorder{}
			m := newActiveDeadlineHandler(func(types.UID) (v1.PodStatus, bool) {
				if tc.status == nil {
					return v1.PodStatus{}, false
				}
				return *tc.status, true
			}, rec, func() time.Time { return now })
			if got := m.ShouldSync(pod); got != tc.want {
				t.Errorf("ShouldSync = %v, want %v", got, tc.want)
			}
			ev := m.ShouldEvict(pod)
			if (ev != nil) != tc.want {
				t.Fatalf("ShouldEvict = %+v, want eviction %v", ev, tc.want)
			}
			var wantEvents []string
			if tc.want {
				if ev.Reason != "DeadlineExceeded" || ev.Message != "Pod was active on the node longer than the specified deadline" {
					t.Errorf("eviction = %+v", ev)
				}
				wantEvents = []string{event}
			}
			if got := rec.Events(); !slices.Equal(got, wantEvents) {
				t.Errorf("events = %q, want %q", got, wantEvents)
			}
		})
	}
}

// A pod whose activeDeadlineSeconds an update lowered below the time it has
// been active fails at its next sync: phase Failed, reason
// DeadlineExceeded, and the worker is told it is terminal so its
// containers are killed.
func TestSyncPodFailsAPodPastItsActiveDeadline(t *testing.T) {
	const uid = types.UID("p")
	for _, tc := range []struct {
		desc         string
		deadline     *int64
		wantTerminal bool
	}{
		{desc: "within its deadline the pod runs", deadline: new(int64(3600))},
		{desc: "a lowered deadline already past fails the pod", deadline: new(int64(1)), wantTerminal: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			rt := newFakeRuntime()
			rt.setStatus(uid, runningStatus(uid, container.ContainerStateRunning))
			pm := podmanager.New()
			rec := &events.FakeRecorder{}
			k := New(Options{Recorder: recorderWithForget{rec}}, source.NewPodConfig(), pm, rt, &fakeCRI{})
			pod := cachePod(uid)
			pm.AddPod(pod)
			// The pod has been running for a minute.
			pm.SetPodStatus(uid, v1.PodStatus{Phase: v1.PodRunning, StartTime: &metav1.Time{Time: time.Now().Add(-time.Minute)}})
			updated := pod.DeepCopy()
			updated.Spec.ActiveDeadlineSeconds = tc.deadline
			pm.UpdatePod(updated)

			terminal, err := k.SyncPod(context.Background(), 0, updated)
			if err != nil {
				t.Fatal(err)
			}
			if terminal != tc.wantTerminal {
				t.Errorf("SyncPod terminal = %v, want %v", terminal, tc.wantTerminal)
			}
			s, _ := pm.GetPodStatus(uid)
			failed := s.Phase == v1.PodFailed && s.Reason == "DeadlineExceeded"
			if failed != tc.wantTerminal {
				t.Errorf("status phase %s reason %q, want DeadlineExceeded %v", s.Phase, s.Reason, tc.wantTerminal)
			}
		})
	}
}

// recorderWithForget makes a FakeRecorder a Recorder.
type recorderWithForget struct{ *events.FakeRecorder }

func (recorderWithForget) Forget(string, string) {}

// The once-a-second sync picks the pods past their active deadline and no
// others, so such a pod fails without waiting for its periodic resync.
func TestGetPodsToSync(t *testing.T) {
	pm := podmanager.New()
	k := New(Options{}, source.NewPodConfig(), pm, newFakeRuntime(), &fakeCRI{})
	startedAgo := func(d time.Duration) v1.PodStatus {
		return v1.PodStatus{StartTime: &metav1.Time{Time: time.Now().Add(-d)}}
	}
	for _, p := range []struct {
		uid      types.UID
		deadline *int64
		status   v1.PodStatus
	}{
		{uid: "past", deadline: new(int64(5)), status: startedAgo(time.Minute)},
		{uid: "within", deadline: new(int64(3600)), status: startedAgo(time.Minute)},
		{uid: "none", status: startedAgo(time.Hour)},
		{uid: "not-started", deadline: new(int64(5))},
	} {
		pod := cachePod(p.uid)
		pod.Spec.ActiveDeadlineSeconds = p.deadline
		pm.AddPod(pod)
		pm.SetPodStatus(p.uid, p.status)
	}
	var got []types.UID
	for _, pod := range k.getPodsToSync() {
		got = append(got, pod.UID)
	}
	if !slices.Equal(got, []types.UID{"past"}) {
		t.Errorf("pods to sync = %v, want [past]", got)
	}
}
