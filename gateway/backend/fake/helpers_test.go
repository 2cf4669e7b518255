package fake

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const testImage = "busybox"

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestRuntime(t testing.TB, opts Options) *Runtime {
	t.Helper()
	if opts.Images == nil {
		opts.Images = []string{testImage}
	}
	r := New(opts)
	t.Cleanup(func() { r.Close() })
	return r
}

func sandboxConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Labels:   map[string]string{"app": name},
	}
}

func runSandbox(t testing.TB, r *Runtime, cfg *runtimeapi.PodSandboxConfig) string {
	t.Helper()
	resp, err := r.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatalf("RunPodSandbox(%s): %v", cfg.GetMetadata().GetName(), err)
	}
	return resp.PodSandboxId
}

func containerConfig(name string, annotations map[string]string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: name},
		Image:       &runtimeapi.ImageSpec{Image: testImage},
		Labels:      map[string]string{"container": name},
		Annotations: annotations,
	}
}

func createContainer(t testing.TB, r *Runtime, sbID string, sbCfg *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	t.Helper()
	resp, err := r.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{
		PodSandboxId: sbID, Config: cfg, SandboxConfig: sbCfg,
	})
	if err != nil {
		t.Fatalf("CreateContainer(%s): %v", cfg.GetMetadata().GetName(), err)
	}
	return resp.ContainerId
}

// runContainer creates a sandbox and a started container scripted by behavior.
func runContainer(t testing.TB, r *Runtime, name, behavior string) (sbID, ctrID string) {
	t.Helper()
	sbCfg := sandboxConfig(name)
	sbID = runSandbox(t, r, sbCfg)
	var ann map[string]string
	if behavior != "" {
		ann = map[string]string{BehaviorAnnotation: behavior}
	}
	ctrID = createContainer(t, r, sbID, sbCfg, containerConfig("c", ann))
	if _, err := r.StartContainer(context.Background(), &runtimeapi.StartContainerRequest{ContainerId: ctrID}); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	return sbID, ctrID
}

func containerStatus(t testing.TB, r *Runtime, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	resp, err := r.ContainerStatus(context.Background(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatalf("ContainerStatus(%s): %v", id, err)
	}
	return resp.Status
}

// waitFor checks cond on every tick until it holds; it reports false if
// cond still does not hold after 5s.
func waitFor(cond func() bool) bool {
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
	return true
}

// waitState polls until the container reaches state; scripted exits fire on
// real timers.
func waitState(t testing.TB, r *Runtime, id string, want runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	t.Helper()
	var st *runtimeapi.ContainerStatus
	if !waitFor(func() bool { st = containerStatus(t, r, id); return st.State == want }) {
		t.Fatalf("container %s stayed %s, want %s", id, st.State, want)
	}
	return st
}

// eventStream is a server stream for GetContainerEvents called directly.
type eventStream struct {
	grpc.ServerStream
	ctx    context.Context
	events chan *runtimeapi.ContainerEventResponse
	block  chan struct{} // when non-nil, Send waits on it (a slow client)
}

func newEventStream(ctx context.Context) *eventStream {
	return &eventStream{ctx: ctx, events: make(chan *runtimeapi.ContainerEventResponse, 4096)}
}

func (s *eventStream) Context() context.Context { return s.ctx }

func (s *eventStream) Send(ev *runtimeapi.ContainerEventResponse) error {
	if s.block != nil {
		select {
		case <-s.block:
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	}
	s.events <- ev
	return nil
}

// subscribe starts GetContainerEvents and waits until the subscription is
// registered, so no event published afterwards is missed.
func subscribe(t *testing.T, r *Runtime, s *eventStream) <-chan error {
	t.Helper()
	before := r.events.count.Load()
	done := make(chan error, 1)
	go func() { done <- r.GetContainerEvents(&runtimeapi.GetEventsRequest{}, s) }()
	if !waitFor(func() bool { return r.events.count.Load() != before }) {
		t.Fatal("subscription never registered")
	}
	return done
}

func evString(ev *runtimeapi.ContainerEventResponse, names map[string]string) string {
	return fmt.Sprintf("%s %s", names[ev.ContainerId], ev.ContainerEventType)
}
