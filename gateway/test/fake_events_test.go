package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestFakeEventsToSeveralSubscribers subscribes three gRPC clients to
// GetContainerEvents through the gateway while pods start: the fake sends
// one shared event to every subscriber (no per-subscriber copy), so this
// checks, under -race, that the concurrent sends only read it, and that
// every subscriber receives the same events, each carrying its pod's
// sandbox status and the statuses of the pod's containers.
func TestFakeEventsToSeveralSubscribers(t *testing.T) {
	sock := startGateway(t)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial gateway: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	rt, img := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	const subscribers, pods = 3, 10
	const perPod = 4 // sandbox created and started, container created and started
	// Subscriptions register asynchronously on the server. Probe pods are
	// started until every subscriber has seen an event, then a marker pod:
	// each subscriber keeps the events from the marker's on, so all keep
	// the same stretch of history.
	const want = 2 + pods*perPod // the marker's two, then the pods'
	seen := make(chan struct{}, subscribers)
	got := make([]chan []*runtimeapi.ContainerEventResponse, subscribers)
	for i := range got {
		stream, err := rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		got[i] = make(chan []*runtimeapi.ContainerEventResponse, 1)
		go func() {
			var evs []*runtimeapi.ContainerEventResponse
			first := true
			for len(evs) < want {
				ev, err := stream.Recv()
				if err != nil {
					break
				}
				if first {
					seen <- struct{}{}
					first = false
				}
				if len(evs) > 0 || ev.GetPodSandboxStatus().GetMetadata().GetName() == "marker" {
					evs = append(evs, ev)
				}
			}
			got[i] <- evs
		}()
	}
	runPod := func(name string) string {
		t.Helper()
		sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name}}})
		if err != nil {
			t.Fatal(err)
		}
		return sb.PodSandboxId
	}
	for ready, probe := 0, 0; ready < subscribers; probe++ {
		runPod(fmt.Sprintf("probe-%d", probe))
		for waiting := true; waiting && ready < subscribers; {
			select {
			case <-seen:
				ready++
			case <-time.After(20 * time.Millisecond):
				waiting = false
			}
		}
	}
	sandboxes := map[string]bool{runPod("marker"): true}

	image := "docker.io/library/busybox:1.36"
	if _, err := img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}}); err != nil {
		t.Fatal(err)
	}
	for i := range pods {
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: fmt.Sprintf("p%d", i), Namespace: "default", Uid: fmt.Sprintf("u%d", i)}}
		sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		sandboxes[sb.PodSandboxId] = true
		c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: cfg,
			Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: image}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
			t.Fatal(err)
		}
	}

	var first []*runtimeapi.ContainerEventResponse
	for i, ch := range got {
		evs := <-ch
		if len(evs) != want {
			t.Fatalf("subscriber %d got %d events, want %d", i, len(evs), want)
		}
		for j, ev := range evs {
			sb := ev.GetPodSandboxStatus().GetId()
			if !sandboxes[sb] {
				t.Fatalf("subscriber %d event %d carries sandbox %q, not one of the pods'", i, j, sb)
			}
			// The container events carry the pod's one container.
			if ev.ContainerId != sb && (len(ev.ContainersStatuses) != 1 || ev.ContainersStatuses[0].Id != ev.ContainerId) {
				t.Fatalf("subscriber %d event %d about %s carries statuses %v", i, j, ev.ContainerId, ev.ContainersStatuses)
			}
		}
		if i == 0 {
			first = evs
			continue
		}
		for j := range evs {
			if !proto.Equal(evs[j], first[j]) {
				t.Fatalf("event %d differs between subscribers 0 and %d:\n%v\n%v", j, i, first[j], evs[j])
			}
		}
	}
}
