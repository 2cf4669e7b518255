// Package bench measures the latency the gateway adds to a CRI call.
//
// Each benchmark runs the same call three ways against the same backend:
//
//	direct   the backend's method called in-process (no gRPC at all)
//	grpc     a gRPC client to a plain grpc.Server serving the backend on a unix
//	         socket: what a runtime's own socket costs
//	gateway  a gRPC client to the gateway's server (interceptors, validation,
//	         policy, metrics) on a unix socket
//
// The gateway's added latency is gateway - grpc. Every benchmark reports the
// median and 99th percentile of per-call latency as p50-ns and p99-ns.
//
//	cd gateway && go test -run '^$' -bench . -benchtime 20000x ./bench/
//
// BenchmarkPodSync makes, per iteration, the eleven CRI calls sync makes to
// start one pod (status lists by pod UID, RunPodSandbox, PodSandboxStatus,
// ImageStatus, CreateContainer, StartContainer, the statuses again), pods
// accumulating as in a burst, and adds gateway+events, with a
// GetContainerEvents subscriber attached as sync keeps one, and
// gateway+2events, with a second subscriber beside it:
//
//	go test -run '^$' -bench PodSync -benchtime 1000x ./bench/
//
// BenchmarkContainerd compares a client of containerd's socket with the
// gateway's cri backend in front of it, with the gateway both in the
// benchmark's process and in a process of its own (as deployed); it runs only
// when SPLITLET_CONTAINERD_ENDPOINT names the socket:
//
//	SPLITLET_CONTAINERD_ENDPOINT=unix:///run/containerd/containerd.sock \
//	  go test -run '^$' -bench Containerd -benchtime 5000x -count 3 ./bench/
//
// SPLITLET_BENCH_GATEWAY_GOMAXPROCS and SPLITLET_BENCH_GATEWAY_GOGC set
// GOMAXPROCS and GOGC for the gateway process alone.
package bench

import (
	"slices"
	"testing"
	"time"
)

// Latencies records per-call durations of one benchmark run.
type Latencies []time.Duration

// Report adds p50-ns and p99-ns to b's results.
func (l Latencies) Report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	b.ReportMetric(float64(percentile(s, 50)), "p50-ns")
	b.ReportMetric(float64(percentile(s, 99)), "p99-ns")
}

// percentile of sorted s by the nearest-rank method.
func percentile(s []time.Duration, p int) time.Duration {
	rank := (p*len(s) + 99) / 100 // ceil(p/100 * n)
	if rank < 1 {
		rank = 1
	}
	return s[rank-1]
}

// Measure runs call b.N times and reports its latency percentiles. A failing
// call fails the benchmark: a fast error would flatter the figures.
func Measure(b *testing.B, call func() error) {
	b.Helper()
	lat := make(Latencies, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		err := call()
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	lat.Report(b)
}
