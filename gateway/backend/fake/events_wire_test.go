package fake

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/containerd/errdefs/pkg/errgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// grpcEvents serves a runtime over an in-memory gRPC connection and records,
// per GetContainerEvents stream in the order the streams started, every
// message the runtime hands to SendMsg, so tests can see whether an event
// went out as a plain message or as a shared grpc.PreparedMsg.
type grpcEvents struct {
	r    *Runtime
	conn *grpc.ClientConn

	mu   sync.Mutex
	sent [][]any
}

func newGRPCEvents(t *testing.T, opts Options, dialOpts ...grpc.DialOption) *grpcEvents {
	t.Helper()
	g := &grpcEvents{r: newTestRuntime(t, opts)}
	ln := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(grpc.StreamInterceptor(g.intercept))
	runtimeapi.RegisterRuntimeServiceServer(srv, g.r)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	dialOpts = append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return ln.DialContext(ctx) }),
	}, dialOpts...)
	conn, err := grpc.NewClient("passthrough:///bufnet", dialOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	g.conn = conn
	return g
}

// intercept records what the handler sends and turns its errors into gRPC
// status as the gateway's error conversion does.
func (g *grpcEvents) intercept(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	g.mu.Lock()
	idx := len(g.sent)
	g.sent = append(g.sent, nil)
	g.mu.Unlock()
	return errgrpc.ToGRPC(handler(srv, &recordingStream{ServerStream: ss, g: g, idx: idx}))
}

// sentBy returns what the idx-th stream has sent so far.
func (g *grpcEvents) sentBy(idx int) []any {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]any(nil), g.sent[idx]...)
}

type recordingStream struct {
	grpc.ServerStream
	g   *grpcEvents
	idx int
}

func (s *recordingStream) SendMsg(m any) error {
	s.g.mu.Lock()
	s.g.sent[s.idx] = append(s.g.sent[s.idx], m)
	s.g.mu.Unlock()
	return s.ServerStream.SendMsg(m)
}

// subscribe opens a GetContainerEvents stream and waits until the runtime
// has registered it, so no event published afterwards is missed.
func (g *grpcEvents) subscribe(t *testing.T, ctx context.Context, opts ...grpc.CallOption) grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse] {
	t.Helper()
	before := g.r.events.count.Load()
	stream, err := runtimeapi.NewRuntimeServiceClient(g.conn).GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if !waitFor(func() bool { return g.r.events.count.Load() != before }) {
		t.Fatal("subscription never registered")
	}
	return stream
}

// recvN receives n events from stream.
func recvN(t *testing.T, stream grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse], n int) []*runtimeapi.ContainerEventResponse {
	t.Helper()
	out := make([]*runtimeapi.ContainerEventResponse, 0, n)
	for len(out) < n {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatalf("after %d of %d events: %v", len(out), n, err)
		}
		out = append(out, ev)
	}
	return out
}

// runPods starts pods named prefix-0 .. prefix-(n-1), each a sandbox with one
// started container (four events), and returns the event each must cause,
// in order, as "<pod>/<sandbox|c> <type>".
func runPods(t *testing.T, r *Runtime, prefix string, n int) []string {
	t.Helper()
	var want []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		_, _ = runContainer(t, r, name, "")
		want = append(want,
			name+"/sandbox CONTAINER_CREATED_EVENT", name+"/sandbox CONTAINER_STARTED_EVENT",
			name+"/c CONTAINER_CREATED_EVENT", name+"/c CONTAINER_STARTED_EVENT")
	}
	return want
}

// eventName names ev like runPods does.
func eventName(ev *runtimeapi.ContainerEventResponse) string {
	pod := ev.GetPodSandboxStatus().GetMetadata().GetName()
	what := "sandbox"
	if ev.GetContainerId() != ev.GetPodSandboxStatus().GetId() {
		for _, cs := range ev.GetContainersStatuses() {
			if cs.GetId() == ev.GetContainerId() {
				what = cs.GetMetadata().GetName()
			}
		}
	}
	return fmt.Sprintf("%s/%s %s", pod, what, ev.GetContainerEventType())
}

// TestEventsEncodedOncePerWireEncoding subscribes over gRPC and checks that
// every subscriber receives the same events in the order the state changed,
// and how they were sent: one subscriber alone gets plain messages; several
// with the same encoding get one shared grpc.PreparedMsg per event; a
// subscriber whose messages are compressed gets an encoding of its own
// (sharing it would send gzip bytes to a client expecting none, and the
// plain subscriber's Recv would fail).
func TestEventsEncodedOncePerWireEncoding(t *testing.T) {
	tests := []struct {
		desc string
		// callOpts has one entry per subscriber: its call options.
		callOpts     [][]grpc.CallOption
		wantPrepared bool
		wantShared   bool // every subscriber sends the same object per event
	}{
		{desc: "one subscriber: plain messages", callOpts: [][]grpc.CallOption{nil}},
		{desc: "two subscribers: one encoding shared", callOpts: [][]grpc.CallOption{nil, nil}, wantPrepared: true, wantShared: true},
		{desc: "three subscribers: one encoding shared", callOpts: [][]grpc.CallOption{nil, nil, nil}, wantPrepared: true, wantShared: true},
		{
			desc:         "plain and gzip subscribers: an encoding each",
			callOpts:     [][]grpc.CallOption{nil, {grpc.UseCompressor(gzip.Name)}},
			wantPrepared: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			g := newGRPCEvents(t, Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var streams []grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse]
			for _, opts := range tc.callOpts {
				streams = append(streams, g.subscribe(t, ctx, opts...))
			}
			want := runPods(t, g.r, "p", 5)

			var first []*runtimeapi.ContainerEventResponse
			for si, s := range streams {
				got := recvN(t, s, len(want))
				for i, ev := range got {
					if name := eventName(ev); name != want[i] {
						t.Fatalf("subscriber %d event %d = %q, want %q", si, i, name, want[i])
					}
				}
				if si == 0 {
					first = got
					continue
				}
				for i := range got {
					if !proto.Equal(got[i], first[i]) {
						t.Fatalf("event %d differs between subscribers 0 and %d:\n%v\n%v", i, si, first[i], got[i])
					}
				}
			}

			sent := make([][]any, len(streams))
			for si := range streams {
				sent[si] = g.sentBy(si)
				if len(sent[si]) != len(want) {
					t.Fatalf("stream %d sent %d messages, want %d", si, len(sent[si]), len(want))
				}
				for i, m := range sent[si] {
					_, prepared := m.(*grpc.PreparedMsg)
					if prepared != tc.wantPrepared {
						t.Fatalf("stream %d message %d sent as %T, want prepared %v", si, i, m, tc.wantPrepared)
					}
				}
			}
			for si := 1; si < len(sent); si++ {
				for i := range sent[si] {
					if shared := sent[si][i] == sent[0][i]; shared != tc.wantShared {
						t.Fatalf("message %d: stream %d sent the same object as stream 0 = %v, want %v", i, si, shared, tc.wantShared)
					}
				}
			}
		})
	}
}

// TestSlowGRPCSubscriberDroppedOtherUnaffected has two gRPC subscribers
// while pods start: one never reads, the other keeps up. The slow one falls
// behind by more than its event buffer (at the latest once its flow-control
// window is full) and is dropped with Unavailable; the other, which shared the slow one's encoded events until
// then, receives every event in order, before and after the drop.
func TestSlowGRPCSubscriberDroppedOtherUnaffected(t *testing.T) {
	// A fixed 64 KiB window (no BDP growth) so that the slow client's
	// window fills after a bounded number of events.
	g := newGRPCEvents(t, Options{EventBuffer: 16},
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(1<<20))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow := g.subscribe(t, ctx)
	fast := g.subscribe(t, ctx)

	var want []string
	var got []*runtimeapi.ContainerEventResponse
	// Pods start in small batches, and the fast subscriber drains each batch
	// before the next starts, so that it never falls behind by more than its
	// buffer; the slow one never reads. Stop some batches after the drop, to
	// see the fast one carry on.
	afterDrop := -1
	for batch := 0; afterDrop < 3; batch++ {
		if batch == 500 {
			t.Fatalf("slow subscriber not dropped after %d events", len(want))
		}
		w := runPods(t, g.r, fmt.Sprintf("b%d", batch), 2)
		want = append(want, w...)
		got = append(got, recvN(t, fast, len(w))...)
		if afterDrop >= 0 {
			afterDrop++
		} else if g.r.events.count.Load() == 1 {
			afterDrop = 0
		}
	}
	for i, ev := range got {
		if name := eventName(ev); name != want[i] {
			t.Fatalf("fast subscriber event %d = %q, want %q", i, name, want[i])
		}
	}

	// The slow subscriber gets what was sent or buffered before the drop, a
	// prefix of the fast one's events, then Unavailable.
	var n int
	var err error
	for {
		var ev *runtimeapi.ContainerEventResponse
		if ev, err = slow.Recv(); err != nil {
			break
		}
		if n >= len(got) || !proto.Equal(ev, got[n]) {
			t.Fatalf("slow subscriber event %d is not the fast one's: %v", n, ev)
		}
		n++
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("slow subscriber ended with %v, want Unavailable", err)
	}
	if n == 0 || n >= len(got) {
		t.Fatalf("slow subscriber received %d of %d events before its drop; want some, not all", n, len(got))
	}
	t.Logf("slow subscriber dropped after %d of %d events", n, len(got))

	// The fast subscriber is still subscribed and receives new events.
	w := runPods(t, g.r, "last", 1)
	for i, ev := range recvN(t, fast, len(w)) {
		if name := eventName(ev); name != w[i] {
			t.Fatalf("after the drop, event %d = %q, want %q", i, name, w[i])
		}
	}
}
