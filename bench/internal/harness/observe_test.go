package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

// podStruct builds a watch event's pod from its JSON form, as a sync
// without the protobuf encoding sends it.
func podStruct(t *testing.T, js string) *structpb.Struct {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatal(err)
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// podProtobuf encodes a pod as sync does for the protobuf encoding.
func podProtobuf(t *testing.T, pod *v1.Pod) []byte {
	t.Helper()
	b, err := pod.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// benchPod is a pod named p with the given number of containers, in
// the given states, in order (fewer states than containers: statuses
// missing).
func benchPod(containers int, states ...v1.ContainerState) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"}}
	for i := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: fmt.Sprintf("c%d", i), Image: "busybox:1.36"})
	}
	for i, st := range states {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, v1.ContainerStatus{Name: fmt.Sprintf("c%d", i), State: st})
	}
	return pod
}

var (
	runningState = v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Unix(1000, 0)}}
	waitingState = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	exitedState  = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}
)

func TestAllRunning(t *testing.T) {
	for _, tc := range []struct {
		desc string
		pod  *v1.Pod
		want bool
	}{
		{desc: "every container running", pod: benchPod(2, runningState, runningState), want: true},
		{desc: "one waiting", pod: benchPod(2, runningState, waitingState)},
		{desc: "one exited", pod: benchPod(2, exitedState, runningState)},
		{desc: "fewer statuses than containers", pod: benchPod(2, runningState)},
		{desc: "no status yet", pod: benchPod(2)},
		{desc: "no containers in the spec", pod: benchPod(0)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := allRunning(tc.pod); got != tc.want {
				t.Errorf("allRunning = %v, want %v", got, tc.want)
			}
			// What the watch delivers is the pod after the protobuf round trip.
			var decoded v1.Pod
			if err := decoded.Unmarshal(podProtobuf(t, tc.pod)); err != nil {
				t.Fatal(err)
			}
			if got := allRunning(&decoded); got != tc.want {
				t.Errorf("allRunning after a protobuf round trip = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodObserverHandle(t *testing.T) {
	runningPB := podProtobuf(t, benchPod(1, runningState))
	pendingPB := podProtobuf(t, benchPod(1))
	runningJSON := `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]},"status":{"containerStatuses":[{"state":{"running":{}}}]}}`
	pendingJSON := `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}]},"status":{"phase":"Pending"}}`
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		desc        string
		events      []*podv1.WatchResponse
		wantRunning time.Time // zero: not marked
		wantGone    time.Time
		wantErr     bool
	}{
		{desc: "headers-only message is ignored", events: []*podv1.WatchResponse{{}}},
		{desc: "pending then running marks the running time",
			events: []*podv1.WatchResponse{
				{Type: podv1.WatchEventType_WATCH_EVENT_TYPE_ADDED, PodProtobuf: pendingPB},
				{Type: podv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED, PodProtobuf: runningPB},
				{Type: podv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED, PodProtobuf: runningPB},
			},
			wantRunning: t0.Add(time.Second)},
		{desc: "deleted marks gone, not running",
			events:   []*podv1.WatchResponse{{Type: podv1.WatchEventType_WATCH_EVENT_TYPE_DELETED, PodProtobuf: runningPB}},
			wantGone: t0},
		{desc: "a Struct from an older sync is still read",
			events: []*podv1.WatchResponse{
				{Type: podv1.WatchEventType_WATCH_EVENT_TYPE_ADDED, Pod: podStruct(t, pendingJSON)},
				{Type: podv1.WatchEventType_WATCH_EVENT_TYPE_MODIFIED, Pod: podStruct(t, runningJSON)},
			},
			wantRunning: t0.Add(time.Second)},
		{desc: "undecodable bytes are an error and mark nothing",
			events:  []*podv1.WatchResponse{{Type: podv1.WatchEventType_WATCH_EVENT_TYPE_DELETED, PodProtobuf: []byte{0x0a, 0xff}}},
			wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			o := newPodObserver(nil)
			var errs []error
			for i, ev := range tc.events {
				if err := o.handle(ev, t0.Add(time.Duration(i)*time.Second)); err != nil {
					errs = append(errs, err)
				}
			}
			if (len(errs) > 0) != tc.wantErr {
				t.Errorf("handle errors %v, wantErr %v", errs, tc.wantErr)
			}
			got, _ := o.running.get("p")
			if !got.Equal(tc.wantRunning) {
				t.Errorf("running at %v, want %v", got, tc.wantRunning)
			}
			got, _ = o.gone.get("p")
			if !got.Equal(tc.wantGone) {
				t.Errorf("gone at %v, want %v", got, tc.wantGone)
			}
		})
	}
}

func TestCRIObserverHandle(t *testing.T) {
	ev := func(typ runtimeapi.ContainerEventType, pod string) *runtimeapi.ContainerEventResponse {
		return &runtimeapi.ContainerEventResponse{ContainerEventType: typ,
			PodSandboxStatus: &runtimeapi.PodSandboxStatus{Metadata: &runtimeapi.PodSandboxMetadata{Name: pod}}}
	}
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		desc        string
		podName     func(string) string
		ev          *runtimeapi.ContainerEventResponse
		wantStarted string
		wantStopped string
	}{
		{desc: "started, name kept", podName: samePodName,
			ev: ev(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, "bench-00001"), wantStarted: "bench-00001"},
		{desc: "static pod suffix removed", podName: staticPodName("node1"),
			ev: ev(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, "bench-00001-node1"), wantStarted: "bench-00001"},
		{desc: "stopped", podName: samePodName,
			ev: ev(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, "bench-00002"), wantStopped: "bench-00002"},
		{desc: "created marks nothing", podName: samePodName,
			ev: ev(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, "bench-00003")},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			o := newCRIObserver(nil, tc.podName)
			o.handle(tc.ev, t0)
			if got := markedNames(o.started); got != tc.wantStarted {
				t.Errorf("started = %q, want %q", got, tc.wantStarted)
			}
			if got := markedNames(o.stopped); got != tc.wantStopped {
				t.Errorf("stopped = %q, want %q", got, tc.wantStopped)
			}
		})
	}
}

func markedNames(t *tracker) string {
	var names []string
	for name := range t.at {
		names = append(names, name)
	}
	return strings.Join(names, ",")
}

func TestTracker(t *testing.T) {
	tr := newTracker()
	t0 := time.Unix(1000, 0)
	tr.mark("a", t0)
	tr.mark("a", t0.Add(time.Hour)) // the first observation counts
	tr.mark("b", t0.Add(2*time.Second))
	starts := map[string]time.Time{"a": t0.Add(-time.Second), "b": t0, "c": t0}

	ds, missing := durations([]string{"a", "b", "c"}, starts, tr)
	if len(ds) != 2 || ds[0] != time.Second || ds[1] != 2*time.Second || missing != 1 {
		t.Errorf("durations = %v, missing %d; want [1s 2s], 1", ds, missing)
	}
	if got := latest([]string{"a", "b", "c"}, tr); !got.Equal(t0.Add(2 * time.Second)) {
		t.Errorf("latest = %v, want %v", got, t0.Add(2*time.Second))
	}
	if err := tr.wait(context.Background(), []string{"a", "b"}); err != nil {
		t.Errorf("wait for marked names: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := tr.wait(ctx, []string{"a", "c"})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 of 2") || !strings.Contains(err.Error(), "c") {
		t.Errorf("wait with an unmarked name = %v, want a deadline error naming c and counting 1 of 2", err)
	}
}

func TestManifests(t *testing.T) {
	names := podNames(3)
	if names[0] != "bench-00000" || names[2] != "bench-00002" {
		t.Fatalf("podNames = %v", names)
	}
	var pod struct {
		Metadata struct{ Name string }
		Spec     struct {
			Containers []struct{ Image, ImagePullPolicy string }
		}
	}
	if err := json.Unmarshal([]byte(podManifest("bench-00007")), &pod); err != nil {
		t.Fatalf("podManifest is not JSON: %v", err)
	}
	if pod.Metadata.Name != "bench-00007" || len(pod.Spec.Containers) != 1 ||
		pod.Spec.Containers[0].Image != benchImage || pod.Spec.Containers[0].ImagePullPolicy != "IfNotPresent" {
		t.Errorf("podManifest decoded to %+v", pod)
	}
	docs := strings.Split(multiManifest(names), "\n---\n")
	if len(docs) != 3 || !strings.Contains(docs[1], `"bench-00001"`) {
		t.Errorf("multiManifest gave %d documents: %q", len(docs), docs)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Ns: []int{10}, Concurrency: 1, Batch: 1, Timeout: time.Second}
	for _, tc := range []struct {
		desc    string
		mutate  func(*Config)
		wantErr bool
	}{
		{desc: "valid", mutate: func(*Config) {}},
		{desc: "kubelet only", mutate: func(c *Config) { c.Ns, c.Kubelet, c.KubeletNs = nil, "/k", []int{5} }},
		{desc: "nothing to run", mutate: func(c *Config) { c.Ns = nil }, wantErr: true},
		{desc: "zero pods", mutate: func(c *Config) { c.Ns = []int{0} }, wantErr: true},
		{desc: "zero concurrency", mutate: func(c *Config) { c.Concurrency = 0 }, wantErr: true},
		{desc: "negative latency", mutate: func(c *Config) { c.Latency = -time.Millisecond }, wantErr: true},
		{desc: "no timeout", mutate: func(c *Config) { c.Timeout = 0 }, wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := ok
			tc.mutate(&c)
			if err := c.validate(); (err != nil) != tc.wantErr {
				t.Errorf("validate = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

// listOnly answers ListContainers with a fixed list; the embedded nil
// interface panics on any other call.
type listOnly struct {
	runtimeapi.RuntimeServiceClient
	containers []*runtimeapi.Container
}

func (l listOnly) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: l.containers}, nil
}

func TestCRIObserverRelistMarksRemovedAsStopped(t *testing.T) {
	ctr := func(pod string, state runtimeapi.ContainerState) *runtimeapi.Container {
		return &runtimeapi.Container{State: state, Labels: map[string]string{"io.kubernetes.pod.name": pod}}
	}
	o := newCRIObserver(nil, samePodName)
	o.started.mark("gone", time.Unix(1, 0))
	o.started.mark("running", time.Unix(1, 0))
	o.rt = listOnly{containers: []*runtimeapi.Container{
		ctr("running", runtimeapi.ContainerState_CONTAINER_RUNNING),
		ctr("exited", runtimeapi.ContainerState_CONTAINER_EXITED),
		ctr("fresh", runtimeapi.ContainerState_CONTAINER_RUNNING),
	}}
	if err := o.relist(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"gone": true, "exited": true, "running": false, "fresh": false} {
		if _, got := o.stopped.get(name); got != want {
			t.Errorf("%s stopped = %v, want %v", name, got, want)
		}
	}
	for _, name := range []string{"running", "exited", "fresh"} {
		if _, ok := o.started.get(name); !ok {
			t.Errorf("%s not marked started", name)
		}
	}
}

// listPods answers List with pods of the given names; the embedded nil
// interface panics on any other call.
type listPods struct {
	podv1connect.PodServiceClient
	names []string
}

func (l listPods) List(context.Context, *connect.Request[podv1.ListRequest]) (*connect.Response[podv1.ListResponse], error) {
	resp := &podv1.ListResponse{}
	for _, n := range l.names {
		resp.Pods = append(resp.Pods, &structpb.Struct{Fields: map[string]*structpb.Value{
			"metadata": structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{"name": structpb.NewStringValue(n)}}),
		}})
	}
	return connect.NewResponse(resp), nil
}

func TestPodObserverMarksVanishedAfterRewatch(t *testing.T) {
	o := newPodObserver(listPods{names: []string{"kept"}})
	for _, name := range []string{"kept", "deleted-unseen"} {
		o.seen.mark(name, time.Unix(1, 0))
	}
	if err := o.markVanished(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := o.gone.get("deleted-unseen"); !ok {
		t.Error("a pod seen before and no longer listed is not marked gone")
	}
	if _, ok := o.gone.get("kept"); ok {
		t.Error("a listed pod is marked gone")
	}
	if _, ok := o.gone.get("never-seen"); ok {
		t.Error("a pod never seen is marked gone")
	}
}

func TestCtrConfigValidate(t *testing.T) {
	ok := CtrConfig{Endpoint: "unix:///run/c.sock", N: 20, Rounds: 4, Image: "busybox", Timeout: time.Second}
	for _, tc := range []struct {
		desc    string
		mutate  func(*CtrConfig)
		wantErr bool
	}{
		{desc: "valid", mutate: func(*CtrConfig) {}},
		{desc: "odd rounds favour the side that goes first", mutate: func(c *CtrConfig) { c.Rounds = 3 }, wantErr: true},
		{desc: "no rounds", mutate: func(c *CtrConfig) { c.Rounds = 0 }, wantErr: true},
		{desc: "tcp endpoint", mutate: func(c *CtrConfig) { c.Endpoint = "tcp://127.0.0.1:1" }, wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c := ok
			tc.mutate(&c)
			if err := c.validate(); (err != nil) != tc.wantErr {
				t.Errorf("validate = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

// TestTrackerWaitWakes: waiters blocked on unmarked names return once
// another goroutine marks the last of them, each with its own set, and a
// waiter that gave up is dropped.
func TestTrackerWaitWakes(t *testing.T) {
	tr := newTracker()
	tr.mark("a", time.Unix(1, 0))
	results := make(chan error, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { results <- tr.wait(ctx, []string{"a", "b", "c"}) }()
	go func() { results <- tr.wait(ctx, []string{"c", "c"}) }()

	short, cancelShort := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelShort()
	if err := tr.wait(short, []string{"d"}); err == nil {
		t.Fatal("wait for a name nobody marks returned nil")
	}
	tr.mark("b", time.Unix(2, 0))
	select {
	case err := <-results:
		t.Fatalf("a waiter returned (%v) before c was marked", err)
	case <-time.After(20 * time.Millisecond):
	}
	tr.mark("c", time.Unix(3, 0))
	for range 2 {
		if err := <-results; err != nil {
			t.Errorf("wait after every name was marked: %v", err)
		}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.waiters) != 0 {
		t.Errorf("%d waiters left registered after all returned", len(tr.waiters))
	}
}
