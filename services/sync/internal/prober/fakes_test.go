package prober

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/prober/probe"
)

// fakeStatus is a settable StatusProvider.
type fakeStatus struct {
	mu       sync.Mutex
	statuses map[types.UID]v1.PodStatus
}

var _ StatusProvider = (*fakeStatus)(nil)

func newFakeStatus() *fakeStatus { return &fakeStatus{statuses: map[types.UID]v1.PodStatus{}} }

func (f *fakeStatus) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.statuses[uid]
	return *s.DeepCopy(), ok
}

func (f *fakeStatus) set(uid types.UID, s v1.PodStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[uid] = s
}

// execReply is one scripted ExecSync answer.
type execReply struct {
	stdout string
	code   int32
	err    error
}

// fakeExecer answers ExecSync from a script, one reply per call, repeating
// the last one; it counts calls.
type fakeExecer struct {
	mu     sync.Mutex
	script []execReply
	calls  int
}

var _ probe.Execer = (*fakeExecer)(nil)

func (e *fakeExecer) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := execReply{}
	if len(e.script) > 0 {
		i := min(e.calls, len(e.script)-1)
		r = e.script[i]
	}
	e.calls++
	return []byte(r.stdout), nil, r.code, r.err
}

func (e *fakeExecer) callCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls
}

// fakeRecorder keeps events as "type reason container: message".
type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

var _ Recorder = (*fakeRecorder)(nil)

func (r *fakeRecorder) EventfContainer(pod *v1.Pod, name, eventType, reason, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s %s: %s", eventType, reason, name, fmt.Sprintf(format, args...)))
}

func (r *fakeRecorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func execProbe(mod func(*v1.Probe)) *v1.Probe {
	p := &v1.Probe{
		ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}},
		PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1,
	}
	if mod != nil {
		mod(p)
	}
	return p
}

func testPod(c v1.Container) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{c}, RestartPolicy: v1.RestartPolicyAlways},
	}
}

// runningStatus is a Running pod status with one running container.
func runningStatus(name, id string, startedAt time.Time, started bool) v1.PodStatus {
	return v1.PodStatus{
		Phase: v1.PodRunning,
		PodIP: "127.0.0.1",
		ContainerStatuses: []v1.ContainerStatus{{
			Name:        name,
			ContainerID: id,
			State:       v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}},
			Started:     &started,
		}},
	}
}

// newTestManager returns a manager whose workers are driven by hand
// (newWorker + doProbe) or started by AddPod; it uses unit as a second.
func newTestManager(ctx context.Context, st *fakeStatus, ex *fakeExecer, rec *fakeRecorder, unit time.Duration) *Manager {
	opts := Options{Status: st, Execer: ex, TimeUnit: unit}
	if rec != nil { // a typed nil would be a non-nil Recorder
		opts.Recorder = rec
	}
	return NewManager(ctx, opts)
}
