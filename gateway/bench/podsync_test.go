package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend/fake"
)

// podSyncCalls are the CRI calls sync makes to start one pod.
type podSyncCalls interface {
	RunPodSandbox(context.Context, *runtimeapi.RunPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error)
	PodSandboxStatus(context.Context, *runtimeapi.PodSandboxStatusRequest, ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error)
	ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error)
	ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error)
	CreateContainer(context.Context, *runtimeapi.CreateContainerRequest, ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error)
	StartContainer(context.Context, *runtimeapi.StartContainerRequest, ...grpc.CallOption) (*runtimeapi.StartContainerResponse, error)
	ContainerStatus(context.Context, *runtimeapi.ContainerStatusRequest, ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error)
	ImageStatus(context.Context, *runtimeapi.ImageStatusRequest, ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error)
}

var _ podSyncCalls = client{}

// direct calls the fake in-process, for the "direct" figures.
type direct struct{ rt *fake.Runtime }

var _ podSyncCalls = direct{}

func (d direct) RunPodSandbox(ctx context.Context, r *runtimeapi.RunPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error) {
	return d.rt.RunPodSandbox(ctx, r)
}

func (d direct) PodSandboxStatus(ctx context.Context, r *runtimeapi.PodSandboxStatusRequest, _ ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	return d.rt.PodSandboxStatus(ctx, r)
}

func (d direct) ListPodSandbox(ctx context.Context, r *runtimeapi.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	return d.rt.ListPodSandbox(ctx, r)
}

func (d direct) ListContainers(ctx context.Context, r *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	return d.rt.ListContainers(ctx, r)
}

func (d direct) CreateContainer(ctx context.Context, r *runtimeapi.CreateContainerRequest, _ ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error) {
	return d.rt.CreateContainer(ctx, r)
}

func (d direct) StartContainer(ctx context.Context, r *runtimeapi.StartContainerRequest, _ ...grpc.CallOption) (*runtimeapi.StartContainerResponse, error) {
	return d.rt.StartContainer(ctx, r)
}

func (d direct) ContainerStatus(ctx context.Context, r *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	return d.rt.ContainerStatus(ctx, r)
}

func (d direct) ImageStatus(ctx context.Context, r *runtimeapi.ImageStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error) {
	return d.rt.ImageStatus(ctx, r)
}

// podSyncCallsPerPod is how many calls syncPod makes per pod.
const podSyncCallsPerPod = 11

// syncPod makes the calls sync makes for a new pod with one container, in
// its order (the kubelet's SyncPod): GetPodStatus (the pod's sandboxes and
// containers by pod UID label), RunPodSandbox and PodSandboxStatus,
// ImageStatus (EnsureImageExists), CreateContainer and StartContainer, then
// GetPodStatus again with both statuses. Labels and annotations are those
// the kubelet sets; the pod's log directory is under logRoot, since the fake
// writes container logs there as containerd does.
func syncPod(ctx context.Context, c podSyncCalls, logRoot string, i int) error {
	name, uid := fmt.Sprintf("pod-%d", i), fmt.Sprintf("uid-%d", i)
	byPod := map[string]string{"io.kubernetes.pod.uid": uid}
	status := func(sandboxID, containerID string) error {
		if _, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: byPod}}); err != nil {
			return err
		}
		if _, err := c.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: byPod}}); err != nil {
			return err
		}
		if sandboxID == "" {
			return nil
		}
		if _, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID}); err != nil {
			return err
		}
		_, err := c.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: containerID})
		return err
	}
	if err := status("", ""); err != nil {
		return err
	}
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		Hostname:     name,
		LogDirectory: filepath.Join(logRoot, "default_"+name+"_"+uid),
		Labels: map[string]string{
			"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": uid,
		},
		Annotations: map[string]string{"kubernetes.io/config.source": "file", "kubernetes.io/config.seen": "2026-11-22T00:00:00Z"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent:    "/kubepods/besteffort/pod" + uid,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER}},
		},
	}
	sb, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		return err
	}
	if _, err := c.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.GetPodSandboxId()}); err != nil {
		return err
	}
	if _, err := c.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}}); err != nil {
		return err
	}
	ctr, err := c.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sb.GetPodSandboxId(),
		SandboxConfig: sbCfg,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:    &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: "busybox"},
			Command:  []string{"sleep", "3600"},
			LogPath:  "app/0.log",
			Labels: map[string]string{
				"io.kubernetes.container.name": "app", "io.kubernetes.pod.name": name,
				"io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": uid,
			},
			Annotations: map[string]string{
				"io.kubernetes.container.hash": "1a2b3c4d", "io.kubernetes.container.restartCount": "0",
				"io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
			},
		},
	})
	if err != nil {
		return err
	}
	if _, err := c.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.GetContainerId()}); err != nil {
		return err
	}
	return status(sb.GetPodSandboxId(), ctr.GetContainerId())
}

// BenchmarkPodSync starts one pod per iteration with the calls sync makes
// (syncPod), direct, over plain gRPC and through the gateway, and through
// the gateway with a GetContainerEvents subscriber draining the events, as
// sync's evented lifecycle keeps one open, and with two such subscribers
// (sync and a watcher, which share each event's encoding); p50-ns and p99-ns are per pod,
// and calls/s the CRI calls served per second. Pods accumulate, as in a
// burst: use -benchtime Nx with the burst size.
//
//	go test -run '^$' -bench PodSync -benchtime 2000x ./bench/
func BenchmarkPodSync(b *testing.B) {
	ctx := context.Background()
	for _, way := range []string{"direct", "grpc", "gateway", "gateway+events", "gateway+2events"} {
		b.Run(way, func(b *testing.B) {
			rt := fake.New(fake.Options{})
			b.Cleanup(func() { rt.Close() })
			if err := rt.Preload(image); err != nil {
				b.Fatal(err)
			}
			var c podSyncCalls
			switch way {
			case "direct":
				c = direct{rt}
			case "grpc":
				c = plainServer(b, rt)
			case "gateway":
				c = gatewayServer(b, rt)
			default:
				gw := gatewayServer(b, rt)
				c = gw
				// One subscriber as sync; with 2events a second, as a
				// watcher (crictl, the burst harness) beside sync.
				events := drainEvents(b, gw)
				if way == "gateway+2events" {
					events2 := drainEvents(b, gw)
					defer func() { b.ReportMetric(float64(events2())/float64(b.N), "events2/pod") }()
				}
				// 4 per pod (sandbox and container created and started),
				// less those sent before the subscription took.
				defer func() { b.ReportMetric(float64(events())/float64(b.N), "events/pod") }()
			}
			logRoot, i := logDir(b), 0
			Measure(b, func() error { i++; return syncPod(ctx, c, logRoot, i) })
			b.ReportMetric(float64(b.N*podSyncCallsPerPod)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// drainMarkerPrefix names the sandboxes drainEvents runs as markers.
const drainMarkerPrefix = "drain-marker-"

// drainMarkers numbers the markers, one per drainEvents.
var drainMarkers atomic.Int64

// drainEvents subscribes to c's container events and counts them until the
// benchmark ends; the returned function waits for the subscription to have
// received what was sent so far and returns the count.
//
// It waits on a marker: a sandbox it runs once the pods are started. A
// subscriber gets the events in the order the state changed, so when the
// marker's first event arrives every pod's event has. Markers' events (this
// subscriber's and another's) are not counted.
func drainEvents(b *testing.B, c client) func() int64 {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := c.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		b.Fatal(err)
	}
	marker := fmt.Sprintf("%s%d", drainMarkerPrefix, drainMarkers.Add(1))
	var n atomic.Int64
	marked, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev, err := stream.Recv()
			if err != nil {
				return
			}
			switch name := ev.GetPodSandboxStatus().GetMetadata().GetName(); {
			case name == marker && ev.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT:
				close(marked)
			case strings.HasPrefix(name, drainMarkerPrefix):
			default:
				n.Add(1)
			}
		}
	}()
	b.Cleanup(func() { cancel(); <-done })
	return func() int64 {
		cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: marker, Namespace: "default", Uid: marker}}
		if _, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-marked:
		case <-done: // the stream ended (a subscriber that fell behind is dropped): the count is final
		case <-time.After(5 * time.Second):
			b.Fatalf("the marker sandbox's event did not arrive within 5s, after %d events", n.Load())
		}
		return n.Load()
	}
}

// logDir is a directory for the pods' logs, on tmpfs when the machine has
// /dev/shm: the fake creates a log file per started container, as
// containerd does, and on a busy ext4 disk that file creation took three
// quarters of the benchmark's time, measuring the disk instead of the
// gateway.
func logDir(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "splitlet-bench-logs")
	if err != nil {
		return b.TempDir()
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
