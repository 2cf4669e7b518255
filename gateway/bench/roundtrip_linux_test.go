//go:build linux

package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend/fake"
)

// childRoundTripEnv names, in a re-executed test binary, the socket on which
// to serve the fake runtime with a bare gRPC server (see TestMain).
const childRoundTripEnv = "SPLITLET_BENCH_ROUNDTRIP_SOCKET"

// BenchmarkRoundTrip is the floor under the gateway's added latency and
// under the CPU a pod's CRI calls cost: one unary call (Version, a few
// bytes each way) from this process to a bare gRPC server in a process of
// its own (this binary re-executed) that answers from the fake runtime,
// with no interceptors, policy or backend hop. A gateway in front of a
// runtime adds at least one such round trip. Besides the latency it
// reports the CPU per call of the client (this process) and of the server
// process, with the server at Go's default GOMAXPROCS, at 1, and with the
// client at 1 too, one call at a time; and at Go's default with 32 calls in
// flight, as a pod burst's workers call (each call's share of the CPU):
//
//	cd gateway && go test -run '^$' -bench RoundTrip -benchtime 20000x -count 3 ./bench/
func BenchmarkRoundTrip(b *testing.B) {
	for _, v := range []struct {
		name        string
		serverProcs string
		clientProcs int
		parallel    int // calls in flight (RunParallel); 0: one at a time
	}{
		{name: "server-procs-default"},
		{name: "server-procs-1", serverProcs: "1"},
		{name: "both-procs-1", serverProcs: "1", clientProcs: 1},
		{name: "32-in-flight", parallel: 32},
	} {
		b.Run(v.name, func(b *testing.B) {
			if v.clientProcs != 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(v.clientProcs))
			}
			c, pid := roundTripServer(b, v.serverProcs)
			ctx := context.Background()
			call := func() error {
				_, err := c.Version(ctx, &runtimeapi.VersionRequest{})
				return err
			}
			for range 1000 { // connection, stacks and caches warm
				if err := call(); err != nil {
					b.Fatal(err)
				}
			}
			client0, server0 := selfCPU(b), processCPU(b, pid)
			if v.parallel != 0 {
				measureParallel(b, v.parallel, call)
			} else {
				Measure(b, call)
			}
			client, server := selfCPU(b)-client0, processCPU(b, pid)-server0
			b.ReportMetric(float64(client.Microseconds())/float64(b.N), "client-cpu-µs/op")
			b.ReportMetric(float64(server.Microseconds())/float64(b.N), "server-cpu-µs/op")
		})
	}
}

// measureParallel runs call b.N times from inFlight goroutines at once, as
// a pod burst's workers call, and reports the latency percentiles.
func measureParallel(b *testing.B, inFlight int, call func() error) {
	b.Helper()
	var mu sync.Mutex
	lat := make(Latencies, 0, b.N)
	b.SetParallelism((inFlight + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine Latencies
		for pb.Next() {
			start := time.Now()
			err := call()
			mine = append(mine, time.Since(start))
			if err != nil {
				b.Error(err)
				return
			}
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	lat.Report(b)
}

// roundTripServer starts the bare server as a child process with
// GOMAXPROCS procs ("" for Go's default) and returns a client of it and
// the child's pid.
func roundTripServer(b *testing.B, procs string) (client, int) {
	b.Helper()
	path := socketPath(b)
	env := []string{childRoundTripEnv + "=" + path}
	if procs != "" {
		env = append(env, "GOMAXPROCS="+procs)
	}
	pid := startChild(b, "round-trip server", env...)
	return dial(b, path), pid
}

// runRoundTripChild serves the fake runtime's RuntimeService with a bare
// gRPC server on socket until its standard input closes.
func runRoundTripChild(socket string) error {
	rt := fake.New(fake.Options{})
	defer rt.Close()
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	gs := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(gs, rt)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		gs.Stop()
	}()
	fmt.Println("ready")
	return gs.Serve(ln)
}

// selfCPU is the user and system CPU this process has used.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
