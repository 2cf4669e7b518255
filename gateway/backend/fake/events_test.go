package fake

import (
	"context"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestEventsInOrder(t *testing.T) {
	r := newTestRuntime(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newEventStream(ctx)
	done := subscribe(t, r, s)

	sbCfg := sandboxConfig("p")
	sb := runSandbox(t, r, sbCfg)
	c := createContainer(t, r, sb, sbCfg, containerConfig("c", nil))
	crash := createContainer(t, r, sb, sbCfg, containerConfig("crash", map[string]string{BehaviorAnnotation: "crash"}))
	for _, id := range []string{c, crash} {
		if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{sb: "sandbox", c: "c", crash: "crash"}
	want := []string{
		"sandbox CONTAINER_CREATED_EVENT",
		"sandbox CONTAINER_STARTED_EVENT",
		"c CONTAINER_CREATED_EVENT",
		"crash CONTAINER_CREATED_EVENT",
		"c CONTAINER_STARTED_EVENT",
		"crash CONTAINER_STARTED_EVENT",
		"crash CONTAINER_STOPPED_EVENT",
		"c CONTAINER_STOPPED_EVENT",
		"c CONTAINER_DELETED_EVENT",
		"sandbox CONTAINER_STOPPED_EVENT",
		"crash CONTAINER_DELETED_EVENT",
		"sandbox CONTAINER_DELETED_EVENT",
	}
	var got []*runtimeapi.ContainerEventResponse
	for len(got) < len(want) {
		select {
		case ev := <-s.events:
			got = append(got, ev)
		case <-time.After(5 * time.Second):
			t.Fatalf("got %d events, want %d", len(got), len(want))
		}
	}
	for i, ev := range got {
		if g := evString(ev, names); g != want[i] {
			t.Errorf("event %d = %q, want %q", i, g, want[i])
		}
		if ev.CreatedAt == 0 || ev.PodSandboxStatus.GetId() != sb {
			t.Errorf("event %d lacks timestamp or sandbox status: %v", i, ev)
		}
	}
	// The STOPPED event of the crashed container carries its exit.
	for _, cs := range got[6].ContainersStatuses {
		if cs.Id == crash && (cs.State != runtimeapi.ContainerState_CONTAINER_EXITED || cs.ExitCode != 1) {
			t.Errorf("crash status in its STOPPED event: %s %d", cs.State, cs.ExitCode)
		}
	}
	if n := len(got[4].ContainersStatuses); n != 2 {
		t.Errorf("c STARTED event has %d container statuses, want 2", n)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("GetContainerEvents returned nil after cancel")
	}
	if r.events.active() {
		t.Fatal("subscriber still registered after the stream ended")
	}
}

func TestSlowSubscriberIsDropped(t *testing.T) {
	r := newTestRuntime(t, Options{EventBuffer: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := newEventStream(ctx)
	slow.block = make(chan struct{}) // never reads
	slowDone := subscribe(t, r, slow)
	fast := newEventStream(ctx)
	fastDone := subscribe(t, r, fast)

	// Ten sandboxes make twenty events; the runtime must not block on the
	// slow subscriber.
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := 0; i < 10; i++ {
			runSandbox(t, r, sandboxConfig(string(rune('a'+i))))
		}
	}()
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("runtime blocked on a slow events subscriber")
	}
	// The slow subscriber is out of the broker already, though its stream
	// goroutine is still stuck in Send; once Send returns it ends.
	if n := r.events.count.Load(); n > 1 {
		t.Errorf("%d subscribers still registered, want the slow one dropped", n)
	}
	close(slow.block)
	select {
	case err := <-slowDone:
		if !errdefs.IsUnavailable(err) {
			t.Fatalf("slow subscriber ended with %v, want Unavailable", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("slow subscriber was not dropped")
	}
	// The fast one keeps up only as far as its own buffer: it may be
	// dropped too (buffer 2), which is the documented policy; what must
	// hold is that whatever it received came in order.
	cancel()
	<-fastDone
	var prev int64
	for len(fast.events) > 0 {
		ev := <-fast.events
		if ev.CreatedAt < prev {
			t.Fatal("events out of order")
		}
		prev = ev.CreatedAt
	}
}

func TestCloseEndsSubscriptions(t *testing.T) {
	r := New(Options{})
	s := newEventStream(context.Background())
	done := subscribe(t, r, s)
	r.Close()
	select {
	case err := <-done:
		if !errdefs.IsUnavailable(err) {
			t.Fatalf("after Close: %v, want Unavailable", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the subscription")
	}
	if err := r.GetContainerEvents(&runtimeapi.GetEventsRequest{}, s); !errdefs.IsUnavailable(err) {
		t.Fatalf("subscribe after Close: %v", err)
	}
}
