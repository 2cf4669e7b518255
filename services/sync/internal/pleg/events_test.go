package pleg

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/testwait"
	"github.com/splitlet/splitlet/services/sync/internal/container"
	"github.com/splitlet/splitlet/services/sync/internal/pleg/plegtest"
)

// eventsCRI is a plegtest.FakeCRI that counts node-wide sandbox listings and serves
// GetContainerEvents: an open stream that delivers nothing until broken,
// or Unimplemented, as containerd 1.6 answers.
type eventsCRI struct {
	plegtest.FakeCRI
	unimplemented bool

	mu     sync.Mutex
	lists  int
	stream *fakeEventStream
}

func (f *eventsCRI) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	f.mu.Lock()
	f.lists++
	f.mu.Unlock()
	return f.FakeCRI.ListPodSandbox(ctx, req, opts...)
}

func (f *eventsCRI) GetContainerEvents(ctx context.Context, _ *runtimeapi.GetEventsRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[runtimeapi.ContainerEventResponse], error) {
	s := &fakeEventStream{ctx: ctx, broken: make(chan struct{}), unimplemented: f.unimplemented}
	f.mu.Lock()
	f.stream = s
	f.mu.Unlock()
	return s, nil
}

func (f *eventsCRI) relists() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

// breakStream ends the open stream with Unavailable.
func (f *eventsCRI) breakStream() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.stream.broken)
}

// fakeEventStream is a client stream of container events; the methods of
// the embedded interface it does not define panic if called.
type fakeEventStream struct {
	grpc.ClientStream
	ctx           context.Context
	broken        chan struct{}
	unimplemented bool
}

// Header answers at once: headers for a live stream, nothing for a failed
// call, as grpc-go's client stream does.
func (s *fakeEventStream) Header() (metadata.MD, error) {
	if s.unimplemented {
		return nil, nil
	}
	return metadata.MD{}, nil
}

func (s *fakeEventStream) Recv() (*runtimeapi.ContainerEventResponse, error) {
	if s.unimplemented {
		return nil, status.Error(codes.Unimplemented, "unknown method GetContainerEvents")
	}
	select {
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	case <-s.broken:
		return nil, status.Error(codes.Unavailable, "stream broken")
	}
}

func TestRelistPeriodFollowsTheEventStream(t *testing.T) {
	const short = 20 * time.Millisecond
	for _, tc := range []struct {
		desc          string
		interval      time.Duration
		unimplemented bool
		// run acts on the running PLEG and checks the relists.
		run func(t *testing.T, g *PLEG, cri *eventsCRI)
	}{
		{
			desc:     "a live stream: no relist beyond the one at connection",
			interval: short,
			run: func(t *testing.T, g *PLEG, cri *eventsCRI) {
				testwait.For(t, "the stream is live", func() bool { return g.relistPeriod() == time.Hour })
				// Fifteen relist intervals of the bubble's fake time pass,
				// and whatever they wake runs (synctest.Wait).
				time.Sleep(15 * short)
				synctest.Wait()
				// The first relist and the one when the stream went live.
				if n := cri.relists(); n > 2 {
					t.Errorf("%d relists within %d relist intervals of a live stream, want at most 2", n, 15)
				}
			},
		},
		{
			desc:     "a lost stream: relist at once",
			interval: time.Hour,
			run: func(t *testing.T, g *PLEG, cri *eventsCRI) {
				testwait.For(t, "the stream is live", func() bool { return g.relistPeriod() == time.Hour && cri.relists() == 2 })
				cri.breakStream()
				// With both periods an hour, only the loss can relist.
				testwait.For(t, "a relist after the loss", func() bool { return cri.relists() > 2 })
			},
		},
		{
			desc:     "a lost stream: relists resume at the base interval",
			interval: short,
			run: func(t *testing.T, g *PLEG, cri *eventsCRI) {
				testwait.For(t, "the stream is live", func() bool { return g.relistPeriod() == time.Hour })
				before := cri.relists()
				cri.breakStream()
				// The PLEG reconnects after 2 s; until then it relists
				// every interval.
				testwait.For(t, "relists resume", func() bool { return cri.relists() >= before+5 })
			},
		},
		{
			desc:          "Unimplemented: relists at the base interval",
			interval:      short,
			unimplemented: true,
			run: func(t *testing.T, g *PLEG, cri *eventsCRI) {
				testwait.For(t, "relists go on", func() bool { return cri.relists() >= 5 })
				if p := g.relistPeriod(); p != short {
					t.Errorf("relist period %s, want the base interval %s", p, short)
				}
			},
		},
	} {
		// In a synctest bubble: the relist timers and the reconnect delay
		// run on fake time, so "no relist for fifteen intervals" is
		// exact rather than a guess about a loaded machine.
		t.Run(tc.desc, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				cri := &eventsCRI{unimplemented: tc.unimplemented}
				g := New(Options{CRI: cri, Runtime: plegtest.NewStatuses(), Cache: container.NewCache(), RelistPeriod: tc.interval, EventedRelistPeriod: time.Hour})
				done := make(chan struct{})
				go func() { g.Run(ctx); close(done) }()
				defer func() { cancel(); <-done }()
				tc.run(t, g, cri)
			})
		})
	}
}
