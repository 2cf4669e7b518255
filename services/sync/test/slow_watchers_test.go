package test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
)

// 500 watchers that never read what they are sent hold sync's memory only
// while their writes can still complete: once a write has waited
// server.WriteTimeout, the stream is dropped although the client keeps its
// connection open, and the goroutines and heap go back near where they
// started. The figures are logged for RELIABILITY.md.
func TestWatchersThatNeverReadAreDropped(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 500 connections and waits out the write timeout")
	}
	// --profiling for pprof's heap?gc=1, which collects before a reading.
	s := startStack(t, stackOptions{syncArgs: []string{"--profiling"}})
	// Pods of 32 KiB, changed a few times once the watchers are in, so that
	// what each watcher is sent outgrows its socket's buffers.
	const pods = 40
	filler := strings.Repeat("x", 32<<10)
	manifest := func(generation int) string {
		var m strings.Builder
		for i := range pods {
			fmt.Fprintf(&m, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: big-%02d, labels: {gen: g%d}, annotations: {filler: %s}}\n"+
				"spec:\n  hostNetwork: true\n  containers: [{name: app, image: busybox:1.36}]\n", i, generation, filler)
		}
		return m.String()
	}
	s.apply(manifest(0))

	metric := func(name string) float64 {
		t.Helper()
		v, err := s.Metric(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	const mib = 1 << 20
	baseHeap := liveHeap(t, s)
	baseGoroutines, baseRSS := metric("go_goroutines"), metric("process_resident_memory_bytes")

	const watchers = 500
	request := "POST /splitlet.pod.v1.PodService/Watch HTTP/1.1\r\nHost: sync\r\n" +
		"Content-Type: application/connect+proto\r\nConnect-Protocol-Version: 1\r\n" +
		"Authorization: Bearer " + s.Token + "\r\nContent-Length: 5\r\n\r\n\x00\x00\x00\x00\x00"
	conns := make([]net.Conn, 0, watchers)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range watchers {
		c, err := net.Dial("tcp", s.SyncAddr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte(request)); err != nil {
			t.Fatal(err)
		}
	}
	var peakGoroutines, peakHeap, peakRSS float64
	waitFor(t, 30*time.Second, "every watcher's stream to be served", func() (bool, string) {
		peakGoroutines = metric("go_goroutines")
		peakHeap, peakRSS = max(peakHeap, metric("go_memstats_heap_inuse_bytes")), max(peakRSS, metric("process_resident_memory_bytes"))
		return peakGoroutines >= baseGoroutines+watchers, fmt.Sprintf("%.0f goroutines, from %.0f", peakGoroutines, baseGoroutines)
	})
	for gen := 1; gen <= 4; gen++ {
		s.apply(manifest(gen))
	}
	// The clients still hold their connections; the server drops them.
	var goroutines, heap float64
	waitFor(t, 3*time.Minute, "the stuck streams to be dropped", func() (bool, string) {
		goroutines = metric("go_goroutines")
		peakHeap, peakRSS = max(peakHeap, metric("go_memstats_heap_inuse_bytes")), max(peakRSS, metric("process_resident_memory_bytes"))
		return goroutines < baseGoroutines+50, fmt.Sprintf("%.0f goroutines, from %.0f", goroutines, baseGoroutines)
	})
	// Streams still being dropped (up to 49 above) each hold a write of
	// about 1.3 MiB, so the heap is judged once they are gone too: it must
	// come back near its start within the write timeout, not at once.
	waitFor(t, time.Minute, "the heap to come back near its start", func() (bool, string) {
		heap = liveHeap(t, s)
		return heap-baseHeap <= 32*mib, fmt.Sprintf("live heap %.1f MiB above its start", (heap-baseHeap)/mib)
	})
	goroutines = metric("go_goroutines")
	rss := metric("process_resident_memory_bytes")
	t.Logf("sync with %d pods of 32 KiB: before: live heap %.1f MiB, RSS %.1f MiB, %.0f goroutines; "+
		"with %d watchers that never read: peak heap %.1f MiB, peak RSS %.1f MiB, %.0f goroutines; "+
		"after they were dropped (connections still open): live heap %.1f MiB, RSS %.1f MiB, %.0f goroutines",
		pods, baseHeap/mib, baseRSS/mib, baseGoroutines, watchers, peakHeap/mib, peakRSS/mib, peakGoroutines, heap/mib, rss/mib, goroutines)
	// The peak counts garbage too (heap in use between collections).
	if peakHeap-baseHeap > 512*mib {
		t.Errorf("heap grew by %.0f MiB with %d stuck watchers, want under 512 MiB", (peakHeap-baseHeap)/mib, watchers)
	}
}

// A 60 MB Apply is refused before it is read, and a pod of 1000 containers
// is refused at apply, before the gateway sees any of it: neither grows
// sync's heap or the gateway's memory.
func TestOversizedInputIsRefusedBeforeItIsHeld(t *testing.T) {
	s := startStack(t, stackOptions{syncArgs: []string{"--profiling"}})
	const mib = 1 << 20
	gatewayRSS := func() float64 {
		t.Helper()
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Gateway.Pid()))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if kb, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				var n float64
				fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), &n)
				return n * 1024
			}
		}
		t.Fatal("no VmRSS")
		return 0
	}
	heap0, gw0 := liveHeap(t, s), gatewayRSS()

	big := "apiVersion: v1\nkind: Pod\nmetadata: {name: huge, annotations: {filler: " + strings.Repeat("x", 60<<20) + "}}\n" +
		"spec:\n  containers: [{name: app, image: busybox:1.36}]\n"
	_, err := s.client.Apply(context.Background(), connect.NewRequest(&podv1.ApplyRequest{Manifest: big}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("60 MB Apply: %v, want resource_exhausted", err)
	}
	var many strings.Builder
	many.WriteString("apiVersion: v1\nkind: Pod\nmetadata: {name: many}\nspec:\n  hostNetwork: true\n  containers:\n")
	for i := range 1000 {
		fmt.Fprintf(&many, "  - {name: c%d, image: busybox:1.36}\n", i)
	}
	_, err = s.client.Apply(context.Background(), connect.NewRequest(&podv1.ApplyRequest{Manifest: many.String()}))
	if err == nil || !strings.Contains(err.Error(), "spec.containers: Too many: 1000") {
		t.Fatalf("1000-container pod: %v, want Too many", err)
	}
	heap1, gw1 := liveHeap(t, s), gatewayRSS()
	t.Logf("after a 60 MB Apply and a 1000-container pod, both refused: sync live heap %.1f -> %.1f MiB, gateway RSS %.1f -> %.1f MiB",
		heap0/mib, heap1/mib, gw0/mib, gw1/mib)
	if heap1-heap0 > 16*mib {
		t.Errorf("sync's live heap grew by %.1f MiB", (heap1-heap0)/mib)
	}
	if gw1-gw0 > 16*mib {
		t.Errorf("the gateway's RSS grew by %.1f MiB", (gw1-gw0)/mib)
	}
}

// liveHeap is sync's heap of live objects: pprof's heap?gc=1 (sync runs
// with --profiling) collects first, as garbage otherwise waits for the next
// collection when nothing allocates.
func liveHeap(t *testing.T, s *stack) float64 {
	t.Helper()
	hc, base, err := s.SyncDial().Client(false)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(base + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	v, err := s.Metric("go_memstats_heap_inuse_bytes")
	if err != nil {
		t.Fatal(err)
	}
	return v
}
