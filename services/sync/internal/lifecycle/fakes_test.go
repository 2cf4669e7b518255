package lifecycle

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/prober/probe"
)

// scriptedExecer answers every ExecSync the same way and records calls.
type scriptedExecer struct {
	stdout, stderr string
	code           int32
	err            error
	block          bool // wait for ctx, as a hung command

	mu    sync.Mutex
	calls [][]string
}

var _ probe.Execer = (*scriptedExecer)(nil)

func (e *scriptedExecer) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	e.mu.Lock()
	e.calls = append(e.calls, append([]string{id}, cmd...))
	e.mu.Unlock()
	if e.block {
		<-ctx.Done()
		return nil, nil, 0, ctx.Err()
	}
	return []byte(e.stdout), []byte(e.stderr), e.code, e.err
}

// fakePodStatus returns fixed IPs.
type fakePodStatus struct {
	ips []string
	err error
}

var _ PodStatusProvider = fakePodStatus{}

func (f fakePodStatus) GetPodStatus(_ context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	return &container.PodStatus{ID: uid, Name: name, Namespace: namespace, IPs: f.ips}, f.err
}

// fakeRecorder keeps events as "type reason [container]: message".
type fakeRecorder struct {
	mu     sync.Mutex
	events []string
}

var _ Recorder = (*fakeRecorder)(nil)

func (r *fakeRecorder) Eventf(_ *v1.Pod, eventType, reason, format string, args ...any) {
	r.add(fmt.Sprintf("%s %s: %s", eventType, reason, fmt.Sprintf(format, args...)))
}

func (r *fakeRecorder) EventfContainer(_ *v1.Pod, name, eventType, reason, format string, args ...any) {
	r.add(fmt.Sprintf("%s %s %s: %s", eventType, reason, name, fmt.Sprintf(format, args...)))
}

func (r *fakeRecorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
}

func (r *fakeRecorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func testPod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}}
}

var testID = container.BuildContainerID("containerd", "c1")
