package server

import (
	"runtime"

	"google.golang.org/grpc"
)

// Flow-control windows of the gateway's HTTP/2 connections. Setting them
// turns off grpc-go's BDP estimator, which otherwise sends a PING (and a
// WINDOW_UPDATE) after nearly every small message it receives, because a CRI
// reply never fills the 64 KiB starting window enough to settle the estimate.
// Each of those frames is one more write and one more wake-up on both sides;
// measured in front of containerd they cost about 20 µs per call. On a local
// socket the round trip is microseconds, so a fixed window this large never
// limits throughput; the BDP estimator could grow the window to 16 MiB per
// stream anyway, so this does not raise the memory a peer can pin.
const (
	// StreamWindowSize is the per-stream receive window.
	StreamWindowSize = 4 << 20
	// ConnWindowSize is the per-connection receive window, shared by all
	// streams: a few maximum-size messages in flight at once.
	ConnWindowSize = 16 << 20
)

// streamWorkers is how many long-lived goroutines serve incoming calls. Each
// new goroutine starts with a small stack, and a call through the interceptors
// into a gRPC client (the cri backend) grows it several times: the stack
// copies showed as about 10% of the gateway's CPU. Workers keep their grown
// stacks (golang/go#18138). A worker is held for a whole runtime round trip
// rather than for CPU time, hence more workers than CPUs; when all are busy,
// or held by long streams such as GetContainerEvents, grpc-go falls back to a
// new goroutine per call, so the number bounds nothing.
func streamWorkers() uint32 { return uint32(4 * runtime.GOMAXPROCS(0)) }

// transportOptions are the gateway's gRPC transport settings, chosen for
// latency on a local socket; see BenchmarkContainerd in ../bench.
func transportOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InitialWindowSize(StreamWindowSize),
		grpc.InitialConnWindowSize(ConnWindowSize),
		grpc.NumStreamWorkers(streamWorkers()),
	}
}
