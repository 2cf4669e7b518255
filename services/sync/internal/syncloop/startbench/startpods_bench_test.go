package startbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend/fake"
	"github.com/splitlet/splitlet/gateway/policy"
	"github.com/splitlet/splitlet/gateway/server"
	launcher "github.com/splitlet/splitlet/internal/stack"
	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/source"
	"github.com/splitlet/splitlet/services/sync/internal/syncloop"
)

// callCounter counts the CRI calls a client makes, by method. Unfiltered
// ListPodSandbox and ListContainers calls are counted apart: they are the
// node-wide relist and housekeeping listings, whose number depends on time,
// not on pods.
type callCounter struct {
	mu       sync.Mutex
	byMethod map[string]int
	nodeWide atomic.Int64
	// eventStreams counts the GetContainerEvents subscriptions.
	eventStreams atomic.Int64
}

func (c *callCounter) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if filepath.Base(method) == "GetContainerEvents" {
		c.eventStreams.Add(1)
	}
	return streamer(ctx, desc, cc, method, opts...)
}

func (c *callCounter) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	switch r := req.(type) {
	case *runtimeapi.ListPodSandboxRequest:
		if r.GetFilter() == nil {
			c.nodeWide.Add(1)
			return invoker(ctx, method, req, reply, cc, opts...)
		}
	case *runtimeapi.ListContainersRequest:
		if r.GetFilter() == nil {
			c.nodeWide.Add(1)
			return invoker(ctx, method, req, reply, cc, opts...)
		}
	}
	c.mu.Lock()
	c.byMethod[filepath.Base(method)]++
	c.mu.Unlock()
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *callCounter) snapshot() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.byMethod))
	total := 0
	for m, n := range c.byMethod {
		out[m] = n
		total += n
	}
	return out, total
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchPods returns n defaulted pods with one long-running container.
func benchPods(n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	created := metav1.NewTime(time.Now())
	for i := range pods {
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("pod-%d", i), Namespace: "default",
				UID: types.UID(fmt.Sprintf("uid-%d", i)), CreationTimestamp: created,
			},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36", ImagePullPolicy: v1.PullIfNotPresent}}},
		}
		defaults.SetDefaults_Pod(p)
		pods[i] = p
	}
	return pods
}

// startPodsResult is one burst: how long until every pod ran, the CRI calls
// by method, and the process CPU time (sync, gateway and fake runtime, all in
// this process) from the burst to the end of the settle period.
type startPodsResult struct {
	toRunning time.Duration
	calls     map[string]int
	total     int
	nodeWide  int64
	cpu       time.Duration
}

// startPods runs the sync loop against the fake runtime served by the
// gateway's server (validation, policy, error conversion) on a unix socket,
// hands it n pods at once, waits until each is Running, then lets the PLEG
// events and relists the starts caused settle before counting.
func startPods(tb testing.TB, n int, relist, settle time.Duration) startPodsResult {
	tb.Helper()
	dir, err := os.MkdirTemp("", "slbench")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(dir)
	rt := fake.New(fake.Options{Images: []string{"busybox:1.36", "registry.k8s.io/pause:3.10"}})
	defer rt.Close()
	sock := filepath.Join(dir, "gw.sock")
	pol := policy.DefaultConfig()
	pol.AllowedHostPathPrefixes = append(pol.AllowedHostPathPrefixes, dir)
	srv, err := server.New(server.Config{SocketPath: sock, DefaultTimeout: server.DefaultRequestTimeout, Policy: pol}, rt)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { _ = srv.Serve(ctx); close(served) }()
	defer func() { cancel(); <-served }()

	counter := &callCounter{byMethod: map[string]int{}}
	conn, err := grpc.NewClient("unix://"+sock,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(counter.unary), grpc.WithStreamInterceptor(counter.stream))
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	criRT, criImg := runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)

	mgr := kuberuntime.NewManager(criRT, criImg, kuberuntime.ManagerOptions{
		Sandbox: kuberuntime.SandboxOptions{PodLogsRoot: filepath.Join(dir, "logs")},
		Container: kuberuntime.ContainerOptions{
			PodLogsRoot:       filepath.Join(dir, "logs"),
			PodVolumesRoot:    filepath.Join(dir, "pods"),
			PodContainersRoot: filepath.Join(dir, "pods"),
		},
	})
	config := source.NewPodConfig(source.APISourceName)
	pm := podmanager.New()
	// The relist duration histogram, alone in a registry (the full set would
	// list the node on every gather), counts the completed relists.
	metrics := syncloop.NewMetrics(nil)
	relists := prometheus.NewRegistry()
	relists.MustRegister(metrics.PLEG.RelistDuration)
	relistCount := func() uint64 {
		mfs, err := relists.Gather()
		if err != nil || len(mfs) == 0 || len(mfs[0].GetMetric()) == 0 {
			return 0
		}
		return mfs[0].GetMetric()[0].GetHistogram().GetSampleCount()
	}
	k := syncloop.New(syncloop.Options{RelistInterval: relist, ResyncInterval: time.Hour, Metrics: metrics}, config, pm, mgr, criRT)
	loopDone := make(chan struct{})
	go func() { _ = k.Run(ctx); close(loopDone) }()
	defer func() { cancel(); <-loopDone }()

	// The PLEG's first relist completes, it subscribes to events, and the
	// relist the live stream asks for completes too, all before the burst,
	// as on a node that has been up for a while: the first syncs then know
	// the runtime holds nothing of the new pods, and no relist overlaps
	// the burst.
	launcher.WaitFor(tb, 30*time.Second, "the PLEG's first relists and event subscription", func() (bool, string) {
		relists, streams := relistCount(), counter.eventStreams.Load()
		return relists >= 2 && streams >= 1, fmt.Sprintf("%d relists, %d event streams", relists, streams)
	})
	before, beforeTotal := counter.snapshot()
	beforeNode := counter.nodeWide.Load()
	cpu0 := cpuTime()
	start := time.Now()
	pods := benchPods(n)
	config.Set(ctx, source.APISourceName, pods)
	// Every pod runs: checked every 2 ms, so that toRunning is exact to
	// that.
	deadline := start.Add(time.Duration(n)*50*time.Millisecond + 30*time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for _, p := range pods {
		for {
			if s, ok := pm.GetPodStatus(p.UID); ok && s.Phase == v1.PodRunning {
				break
			}
			if time.Now().After(deadline) {
				s, _ := pm.GetPodStatus(p.UID)
				calls, _ := counter.snapshot()
				tb.Fatalf("pod %s not running in time: status %+v; CRI calls %v", p.Name, s, calls)
			}
			<-tick.C
		}
	}
	res := startPodsResult{toRunning: time.Since(start)}
	// Not a wait for a condition: the calls and CPU are measured over a
	// fixed window after the last pod ran, which takes in the PLEG events
	// and relists the starts caused. Nothing is asserted on them.
	time.Sleep(settle)
	res.cpu = cpuTime() - cpu0
	after, afterTotal := counter.snapshot()
	res.calls = map[string]int{}
	for m, v := range after {
		if d := v - before[m]; d > 0 {
			res.calls[m] = d
		}
	}
	res.total = afterTotal - beforeTotal
	res.nodeWide = counter.nodeWide.Load() - beforeNode
	return res
}

// BenchmarkStartPods starts a burst of pods (100, or SPLITLET_BENCH_PODS)
// through the whole sync loop against the in-process fake runtime and
// reports the pod-scoped CRI calls per started pod (calls/pod, and per
// method), the node-wide listings, the process CPU per pod and the time
// until every pod was Running.
//
//	cd services/sync && go test -run '^$' -bench StartPods -benchtime 3x ./internal/syncloop/startbench
func BenchmarkStartPods(b *testing.B) {
	n := 100
	if v, err := strconv.Atoi(os.Getenv("SPLITLET_BENCH_PODS")); err == nil && v > 0 {
		n = v
	}
	relist := 200 * time.Millisecond
	b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
		var total, nodeWide int64
		var cpu, toRunning time.Duration
		byMethod := map[string]int{}
		for i := 0; i < b.N; i++ {
			r := startPods(b, n, relist, 5*relist)
			total += int64(r.total)
			nodeWide += r.nodeWide
			cpu += r.cpu
			toRunning += r.toRunning
			for m, v := range r.calls {
				byMethod[m] += v
			}
		}
		pods := float64(n * b.N)
		b.ReportMetric(float64(total)/pods, "calls/pod")
		b.ReportMetric(float64(cpu.Nanoseconds())/pods, "cpu-ns/pod")
		b.ReportMetric(float64(toRunning.Milliseconds())/float64(b.N), "ms-to-running")
		b.ReportMetric(float64(nodeWide)/float64(b.N), "node-lists/op")
		methods := make([]string, 0, len(byMethod))
		for m := range byMethod {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, m := range methods {
			b.ReportMetric(float64(byMethod[m])/pods, m+"/pod")
		}
	})
}
