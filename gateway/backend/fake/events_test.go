package fake

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/protobuf/proto"
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

// TestEventsCarryPodSnapshot checks that every event carries, as
// containerd's generateAndSendContainerEvent does, the status of the
// event's sandbox and of exactly the containers the pod has at that moment,
// that an event already sent is not changed by later state changes, and
// that every subscriber gets the same events.
func TestEventsCarryPodSnapshot(t *testing.T) {
	r := newTestRuntime(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	streams := []*eventStream{newEventStream(ctx), newEventStream(ctx)}
	for _, s := range streams {
		subscribe(t, r, s)
	}
	other := sandboxConfig("other")
	otherSB := runSandbox(t, r, other)
	createContainer(t, r, otherSB, other, containerConfig("x", nil))

	cfg := sandboxConfig("p")
	sb := runSandbox(t, r, cfg)
	c1 := createContainer(t, r, sb, cfg, containerConfig("one", nil))
	c2 := createContainer(t, r, sb, cfg, containerConfig("two", nil))
	for _, id := range []string{c1, c2} {
		if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c1}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c1}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb}); err != nil {
		t.Fatal(err)
	}

	const (
		created = runtimeapi.ContainerState_CONTAINER_CREATED
		running = runtimeapi.ContainerState_CONTAINER_RUNNING
		exited  = runtimeapi.ContainerState_CONTAINER_EXITED
		ready   = runtimeapi.PodSandboxState_SANDBOX_READY
		stopped = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	)
	// The pod's events after the other pod's three, each with the sandbox
	// state and the pod's containers' states it must carry.
	want := []struct {
		id    string
		typ   runtimeapi.ContainerEventType
		sb    runtimeapi.PodSandboxState
		ctrs  map[string]runtimeapi.ContainerState
		about string
	}{
		{sb, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, ready, map[string]runtimeapi.ContainerState{}, "sandbox created"},
		{sb, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, ready, map[string]runtimeapi.ContainerState{}, "sandbox started"},
		{c1, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, ready, map[string]runtimeapi.ContainerState{c1: created}, "one created"},
		{c2, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, ready, map[string]runtimeapi.ContainerState{c1: created, c2: created}, "two created"},
		{c1, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, ready, map[string]runtimeapi.ContainerState{c1: running, c2: created}, "one started"},
		{c2, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, ready, map[string]runtimeapi.ContainerState{c1: running, c2: running}, "two started"},
		{c1, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, ready, map[string]runtimeapi.ContainerState{c1: exited, c2: running}, "one stopped"},
		{c1, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, ready, map[string]runtimeapi.ContainerState{c2: running}, "one removed"},
		{c2, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, ready, map[string]runtimeapi.ContainerState{c2: exited}, "two killed by the sandbox stop"},
		{sb, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, stopped, map[string]runtimeapi.ContainerState{c2: exited}, "sandbox stopped"},
	}
	var first []*runtimeapi.ContainerEventResponse
	for si, s := range streams {
		var got []*runtimeapi.ContainerEventResponse
		for len(got) < 3+len(want) {
			select {
			case ev := <-s.events:
				got = append(got, ev)
			case <-time.After(5 * time.Second):
				t.Fatalf("subscriber %d: %d events, want %d", si, len(got), 3+len(want))
			}
		}
		for i, w := range want {
			ev := got[3+i]
			if ev.ContainerId != w.id || ev.ContainerEventType != w.typ {
				t.Fatalf("subscriber %d event %d (%s) = %s %s", si, i, w.about, ev.ContainerId, ev.ContainerEventType)
			}
			if ev.PodSandboxStatus.GetId() != sb || ev.PodSandboxStatus.GetState() != w.sb {
				t.Errorf("%s: sandbox status %s %s, want %s %s", w.about, ev.PodSandboxStatus.GetId(), ev.PodSandboxStatus.GetState(), sb, w.sb)
			}
			states := map[string]runtimeapi.ContainerState{}
			for _, cs := range ev.ContainersStatuses {
				states[cs.Id] = cs.State
			}
			if !maps.Equal(states, w.ctrs) {
				t.Errorf("%s: container states %v, want %v", w.about, states, w.ctrs)
			}
		}
		if si == 0 {
			first = got
			continue
		}
		for i := range got {
			if !proto.Equal(got[i], first[i]) {
				t.Errorf("event %d differs between subscribers:\n%v\n%v", i, got[i], first[i])
			}
		}
	}
}
