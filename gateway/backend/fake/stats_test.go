package fake

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestStats(t *testing.T) {
	ctx := context.Background()
	clock := newTestClock()
	r := newTestRuntime(t, Options{Clock: clock.Now})
	sb, id := runContainer(t, r, "p", "")
	idle := createContainer(t, r, sb, sandboxConfig("p"), containerConfig("idle", nil))

	var prevCPU uint64
	for i := 0; i < 3; i++ {
		clock.Advance(10 * time.Second)
		resp, err := r.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
		if err != nil {
			t.Fatal(err)
		}
		s := resp.Stats
		cpu := s.Cpu.UsageCoreNanoSeconds.Value
		if cpu <= prevCPU {
			t.Fatalf("cpu usage %d after %d: not increasing", cpu, prevCPU)
		}
		prevCPU = cpu
		if ws, rss := s.Memory.WorkingSetBytes.Value, s.Memory.RssBytes.Value; ws == 0 || rss == 0 || rss > ws {
			t.Fatalf("memory working set %d rss %d", ws, rss)
		}
		if s.WritableLayer.UsedBytes.Value == 0 || s.Attributes.Id != id {
			t.Fatalf("stats %v", s)
		}
	}
	list, err := r.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{PodSandboxId: sb}})
	if err != nil || len(list.Stats) != 1 || list.Stats[0].Attributes.Id != id {
		t.Fatalf("ListContainerStats = %v, %v (want only the running %s, not %s)", list, err, id, idle)
	}
	ps, err := r.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: sb})
	if err != nil {
		t.Fatal(err)
	}
	if got := ps.Stats.Linux.Cpu.UsageCoreNanoSeconds.Value; got < prevCPU {
		t.Fatalf("sandbox cpu %d below its container's %d", got, prevCPU)
	}
	if len(ps.Stats.Linux.Containers) != 1 || ps.Stats.Linux.Process.ProcessCount.Value != 2 {
		t.Fatalf("sandbox stats %v", ps.Stats.Linux)
	}
	// A stopped container's CPU stays where it ended, even as time passes.
	if _, err := r.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	after, _ := r.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	if got := after.Stats.Cpu.UsageCoreNanoSeconds.Value; got != prevCPU {
		t.Fatalf("stopped container cpu %d, want it frozen at %d", got, prevCPU)
	}
	lps, err := r.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
	if err != nil || len(lps.Stats) != 1 {
		t.Fatalf("ListPodSandboxStats = %v, %v", lps, err)
	}
}
