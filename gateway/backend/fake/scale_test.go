package fake

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// populate creates pods sandboxes with 1-3 running containers each and
// returns their IDs. Sandboxes and containers carry the pod UID label the
// kubelet puts on them, so lists can filter by pod as sync does.
func populate(tb testing.TB, r *Runtime, pods int) (sandboxes, containers []string) {
	tb.Helper()
	ctx := context.Background()
	for i := 0; i < pods; i++ {
		cfg := sandboxConfig(fmt.Sprintf("pod-%d", i))
		cfg.Labels[PodUIDLabel] = cfg.Metadata.Uid
		sb := runSandbox(tb, r, cfg)
		sandboxes = append(sandboxes, sb)
		for j := 0; j <= i%3; j++ {
			ccfg := containerConfig(fmt.Sprintf("c%d", j), nil)
			ccfg.Labels[PodUIDLabel] = cfg.Metadata.Uid
			id := createContainer(tb, r, sb, cfg, ccfg)
			if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
				tb.Fatal(err)
			}
			containers = append(containers, id)
		}
	}
	return sandboxes, containers
}

func TestTenThousandSandboxes(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 10,000 sandboxes and 20,000 containers; skipped with -short")
	}
	ctx := context.Background()
	r := newTestRuntime(t, Options{})
	sandboxes, containers := populate(t, r, 10_000)
	if len(containers) != 19_999 {
		t.Fatalf("created %d containers", len(containers))
	}
	pods, err := r.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(pods.Items) != 10_000 {
		t.Fatalf("ListPodSandbox: %d, %v", len(pods.Items), err)
	}
	ips := map[string]bool{}
	for _, sb := range sandboxes[:500] {
		st, err := r.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb})
		if err != nil {
			t.Fatal(err)
		}
		if ips[st.Status.Network.Ip] {
			t.Fatalf("IP %s handed out twice", st.Status.Network.Ip)
		}
		ips[st.Status.Network.Ip] = true
	}
	for i, sb := range sandboxes[:30] {
		resp, err := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: sb}})
		if err != nil || len(resp.Containers) != i%3+1 {
			t.Fatalf("sandbox %d: %d containers, want %d (%v)", i, len(resp.Containers), i%3+1, err)
		}
	}
	running, err := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}})
	if err != nil || len(running.Containers) != len(containers) {
		t.Fatalf("running containers %d, want %d", len(running.Containers), len(containers))
	}
}

func TestConcurrentUse(t *testing.T) {
	// Many goroutines drive their own pods while others list and subscribe;
	// run with -race to check the locking.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newTestRuntime(t, Options{})
	s := newEventStream(ctx)
	done := subscribe(t, r, s)
	go func() {
		for range s.events {
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				cfg := sandboxConfig(fmt.Sprintf("g%d-%d", g, i))
				resp, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
				if err != nil {
					t.Error(err)
					return
				}
				c, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
					PodSandboxId: resp.PodSandboxId, SandboxConfig: cfg,
					Config: containerConfig("c", map[string]string{BehaviorAnnotation: "after=1ms"}),
				})
				if err != nil {
					t.Error(err)
					return
				}
				r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId})
				r.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
				r.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
				r.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: c.ContainerId, Cmd: []string{"true"}})
				r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: resp.PodSandboxId})
				if _, err := r.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: resp.PodSandboxId}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	cancel()
	<-done
	if n := len(r.st.containers) + len(r.st.sandboxes); n != 0 {
		t.Fatalf("%d objects left after removing everything", n)
	}
}

// The benchmarks compare the per-call cost at 100 and at 10,000 pods: status
// calls are map lookups, so the two should cost about the same.
func BenchmarkPodSandboxStatus10k(b *testing.B) {
	for _, pods := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			r := New(Options{Images: []string{testImage}})
			defer r.Close()
			sandboxes, _ := populate(b, r, pods)
			ctx := context.Background()
			runtime.GC() // do not bill populate's garbage to the calls
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxes[i%len(sandboxes)]}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkContainerStatus10k(b *testing.B) {
	for _, pods := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			r := New(Options{Images: []string{testImage}})
			defer r.Close()
			_, containers := populate(b, r, pods)
			ctx := context.Background()
			runtime.GC() // do not bill populate's garbage to the calls
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: containers[i%len(containers)]}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkListContainersBySandbox10k(b *testing.B) {
	for _, pods := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			r := New(Options{Images: []string{testImage}})
			defer r.Close()
			sandboxes, _ := populate(b, r, pods)
			ctx := context.Background()
			runtime.GC() // do not bill populate's garbage to the calls
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: sandboxes[i%len(sandboxes)]}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkListByPodUID10k lists one pod's sandboxes and containers by the
// pod UID label, the two lists sync's GetPodStatus makes for every pod it
// syncs (as the kubelet's getSandboxIDByPodUID and getPodContainerStatuses
// do). With the pod UID index the per-call cost does not grow with the
// number of pods.
func BenchmarkListByPodUID10k(b *testing.B) {
	for _, pods := range []int{100, 10_000} {
		r := New(Options{Images: []string{testImage}})
		populate(b, r, pods)
		ctx := context.Background()
		uid := func(i int) string { return fmt.Sprintf("uid-pod-%d", i%pods) }
		b.Run(fmt.Sprintf("sandboxes/pods=%d", pods), func(b *testing.B) {
			runtime.GC() // do not bill populate's garbage to the calls
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resp, err := r.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
					LabelSelector: map[string]string{PodUIDLabel: uid(i)},
				}})
				if err != nil || len(resp.Items) != 1 {
					b.Fatalf("ListPodSandbox: %d items, %v", len(resp.GetItems()), err)
				}
			}
		})
		b.Run(fmt.Sprintf("containers/pods=%d", pods), func(b *testing.B) {
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resp, err := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
					LabelSelector: map[string]string{PodUIDLabel: uid(i)},
				}})
				if err != nil || len(resp.Containers) != i%pods%3+1 {
					b.Fatalf("ListContainers: %d containers, %v", len(resp.GetContainers()), err)
				}
			}
		})
		r.Close()
	}
}
