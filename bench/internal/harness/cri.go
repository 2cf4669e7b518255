package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	gatewayv1 "github.com/splitlet/splitlet/proto/splitlet/gateway/v1"
)

// dialGateway opens a gRPC connection to the gateway's unix socket.
func dialGateway(socket string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
}

// criReady is the gateway's readiness check: Version answers.
func criReady(conn *grpc.ClientConn) func(context.Context) error {
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
		return err
	}
}

// setLatency makes the fake backend wait d before answering every CRI call
// (FakeControlService.SetFaults with a latency and no errors).
func setLatency(ctx context.Context, conn *grpc.ClientConn, d time.Duration) error {
	_, err := gatewayv1.NewFakeControlServiceClient(conn).SetFaults(ctx, &gatewayv1.SetFaultsRequest{
		Faults: []*gatewayv1.Fault{{Method: "*", Latency: durationpb.New(d)}},
	})
	return err
}

// criObserver marks pods as their container starts and stops, seen from
// the runtime's side: the gateway's GetContainerEvents stream. It is the
// one observation that works for splitlet and the kubelet alike (the
// standalone kubelet has no API to watch). Bench pods have one container,
// so a started container is a running pod.
type criObserver struct {
	rt      runtimeapi.RuntimeServiceClient
	started *tracker
	stopped *tracker
	// podName maps the sandbox's pod name to the bench name (the kubelet
	// appends "-<node name>" to static pods).
	podName func(string) string
}

func newCRIObserver(conn *grpc.ClientConn, podName func(string) string) *criObserver {
	return &criObserver{
		rt:      runtimeapi.NewRuntimeServiceClient(conn),
		started: newTracker(),
		stopped: newTracker(),
		podName: podName,
	}
}

// run follows container events until ctx ends. The fake drops a subscriber
// that falls behind; then run subscribes again and relists, marking what it
// missed at the relist time (late, never early), like the kubelet's evented
// PLEG falls back to a relist.
func (o *criObserver) run(ctx context.Context, subscribed chan<- struct{}) {
	first := true
	for ctx.Err() == nil {
		stream, err := o.rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
		if err == nil && !first {
			err = o.relist(ctx)
		}
		if err != nil {
			if ctx.Err() == nil {
				logctx.From(ctx).Warn("container events", zap.Error(err))
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		if first {
			// The stream is open once a message arrives or, with none
			// pending, after a short settle; a relist covers the gap.
			first = false
			go func() {
				time.Sleep(100 * time.Millisecond)
				close(subscribed)
			}()
		}
		for {
			ev, err := stream.Recv()
			if err != nil {
				if ctx.Err() == nil {
					logctx.From(ctx).Info("container events stream ended; relisting", zap.Error(err))
				}
				break
			}
			o.handle(ev, time.Now())
		}
	}
}

func (o *criObserver) handle(ev *runtimeapi.ContainerEventResponse, now time.Time) {
	name := o.podName(ev.GetPodSandboxStatus().GetMetadata().GetName())
	if name == "" {
		return
	}
	switch ev.GetContainerEventType() {
	case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
		o.started.mark(name, now)
	case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
		o.stopped.mark(name, now)
	}
}

// relist marks every running and exited container found now, and marks
// stopped the pods seen started whose containers are gone: a stream the
// gateway dropped (a subscriber that fell behind) missed their events.
func (o *criObserver) relist(ctx context.Context) error {
	resp, err := o.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return fmt.Errorf("relist: %w", err)
	}
	now := time.Now()
	present := map[string]bool{}
	defer func() {
		for _, name := range o.started.names() {
			if !present[name] {
				o.stopped.mark(name, now)
			}
		}
	}()
	for _, c := range resp.GetContainers() {
		name := o.podName(c.GetLabels()["io.kubernetes.pod.name"])
		if name == "" {
			continue
		}
		present[name] = true
		switch c.GetState() {
		case runtimeapi.ContainerState_CONTAINER_RUNNING:
			o.started.mark(name, now)
		case runtimeapi.ContainerState_CONTAINER_EXITED:
			o.started.mark(name, now)
			o.stopped.mark(name, now)
		}
	}
	return nil
}

// staticPodName undoes the kubelet's static pod naming (name + "-" + node).
func staticPodName(node string) func(string) string {
	suffix := "-" + node
	return func(s string) string { return strings.TrimSuffix(s, suffix) }
}

func samePodName(s string) string { return s }
