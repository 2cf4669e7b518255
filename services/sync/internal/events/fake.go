package events

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// FakeRecorder is a hand-written EventRecorder for other packages' tests. It
// keeps every event as "<type> <reason> <message>" (with " <fieldPath>"
// appended for container events), the shape of client-go's FakeRecorder, so
// a test can assert on exactly what a step recorded.
type FakeRecorder struct {
	mu     sync.Mutex
	events []string
}

var _ EventRecorder = (*FakeRecorder)(nil)

// Event implements EventRecorder.
func (f *FakeRecorder) Event(pod *v1.Pod, eventtype, reason, message string) {
	f.add(fmt.Sprintf("%s %s %s", eventtype, reason, message))
}

// Eventf implements EventRecorder.
func (f *FakeRecorder) Eventf(pod *v1.Pod, eventtype, reason, messageFmt string, args ...any) {
	f.add(fmt.Sprintf("%s %s %s", eventtype, reason, fmt.Sprintf(messageFmt, args...)))
}

// EventfContainer implements EventRecorder.
func (f *FakeRecorder) EventfContainer(pod *v1.Pod, container, eventtype, reason, messageFmt string, args ...any) {
	f.add(fmt.Sprintf("%s %s %s %s", eventtype, reason, fmt.Sprintf(messageFmt, args...), containerFieldPath(pod, container)))
}

// Events returns a copy of the events recorded so far, in order.
func (f *FakeRecorder) Events() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...)
}

func (f *FakeRecorder) add(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, s)
}
