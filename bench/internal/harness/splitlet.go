package harness

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/logctx"
	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

// benchNode is the node name given to sync, admission and the kubelet.
const benchNode = "benchnode"

// runSplitlet is one splitlet run at n pods: fresh processes and
// directories, burst, steady state, deletion.
func runSplitlet(ctx context.Context, cfg Config, n int) (r Result) {
	r = Result{System: "splitlet", N: n, Latency: cfg.Latency.String()}
	log := logctx.From(ctx).With(zap.String("system", r.System), zap.Int("n", n))
	dir, err := runDir(cfg, r.System, n)
	if err != nil {
		r.fail(err)
		return r
	}
	r.Dir = dir
	defer cleanup(ctx, cfg, &r)
	st, conn, err := startStack(ctx, cfg, stackOptions{dir: dir, n: n})
	if err != nil {
		r.fail(err)
		return r
	}
	defer st.Stop()
	defer conn.Close()
	procs := st.Processes()

	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	client, err := newPodClient(st.SyncDial())
	if err != nil {
		r.fail(err)
		return r
	}
	podObs := newPodObserver(client)
	criObs := newCRIObserver(conn, samePodName)
	watching, criSubscribed := make(chan struct{}), make(chan struct{})
	go podObs.run(octx, watching)
	go criObs.run(octx, criSubscribed)
	for _, ch := range []chan struct{}{watching, criSubscribed} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			r.fail(fmt.Errorf("observers not subscribed after 10s"))
			return r
		}
	}

	names := podNames(n)
	all := pids(procs)
	cpu0, self0 := cpuSeconds(all), startHarnessCPU()
	log.Info("burst: applying pods", zap.Int("concurrency", cfg.Concurrency), zap.Int("batch", cfg.Batch))
	// The calls are bounded too: a stuck sync must end the run, not hang it.
	callCtx, callCancel := context.WithTimeout(ctx, cfg.Timeout)
	profiled := startProfiles(ctx, cfg, strconv.Itoa(n), burstProfileSeconds(cfg), profileTargets(cfg, st))
	starts, t0 := applyAll(callCtx, client, names, cfg, multiManifest, &r)
	callCancel()
	wctx, wcancel := context.WithTimeout(ctx, cfg.Timeout)
	r.fail(podObs.running.wait(wctx, names))
	wcancel()
	// The CRI event comes before sync's status does; a short grace covers
	// a relist after a dropped event stream.
	wctx, wcancel = context.WithTimeout(ctx, 10*time.Second)
	r.fail(criObs.started.wait(wctx, names))
	wcancel()
	r.BurstCPUSeconds = diffCPU(cpuSeconds(all), cpu0)
	recordHarnessCPU(&r, self0)
	r.Profiles = profiled()

	ds, missing := durations(names, starts, podObs.running)
	watchSum := summarize(ds, missing)
	r.StartWatch = &watchSum
	ds, missing = durations(names, starts, criObs.started)
	r.StartCRI = summarize(ds, missing)
	if last := latest(names, podObs.running); !last.IsZero() {
		r.BurstSeconds = last.Sub(t0).Seconds()
		if watchSum.Missing == 0 {
			r.PodsPerSec = float64(n) / r.BurstSeconds
		}
	}
	if err := checkAlive(procs); err != nil {
		r.fail(err)
		return r
	}

	if cfg.Steady > 0 {
		log.Info("steady state", zap.Duration("window", cfg.Steady))
		// The steady profile covers the window but for its last second,
		// so that it is written by the time the window ends.
		steadyProfiled := startProfiles(ctx, cfg, fmt.Sprintf("%d-steady", n), max(1, int(cfg.Steady.Seconds())-1), profileTargets(cfg, st))
		r.Steady, err = sampleWindow(ctx, all, cfg.Steady, time.Second)
		r.Profiles = append(r.Profiles, steadyProfiled()...)
		// What each process holds for n pods.
		r.Profiles = append(r.Profiles, startProfiles(ctx, cfg, fmt.Sprintf("%d-heap", n), 0, profileTargets(cfg, st))()...)
		if err != nil {
			r.fail(err)
			return r
		}
		r.SteadySeconds = cfg.Steady.Seconds()
		r.SteadyTotal = sumUsage(r.Steady)
	}

	log.Info("deleting pods")
	t1 := time.Now()
	wctx, wcancel = context.WithTimeout(ctx, cfg.Timeout)
	deleteAll(wctx, client, names, cfg.Concurrency, &r)
	r.fail(podObs.gone.wait(wctx, names))
	r.fail(criObs.stopped.wait(wctx, names))
	wcancel()
	if last := latest(names, podObs.gone); !last.IsZero() {
		r.DeleteSeconds = last.Sub(t1).Seconds()
	}
	if last := latest(names, criObs.stopped); !last.IsZero() {
		r.DeleteCRISeconds = last.Sub(t1).Seconds()
	}
	r.fail(checkAlive(procs))
	return r
}

// applyAll applies the pods with cfg.Concurrency callers, cfg.Batch pods
// per Apply (manifest makes one Apply's manifest from its pods' names), and
// returns each pod's Apply start time and the first one.
func applyAll(ctx context.Context, client podv1connect.PodServiceClient, names []string, cfg Config, manifest func([]string) string, r *Result) (map[string]time.Time, time.Time) {
	batches := make(chan []string)
	go func() {
		defer close(batches)
		for i := 0; i < len(names); i += cfg.Batch {
			batches <- names[i:min(i+cfg.Batch, len(names))]
		}
	}()
	var (
		mu     sync.Mutex
		starts = make(map[string]time.Time, len(names))
		errs   []error
		wg     sync.WaitGroup
	)
	t0 := time.Now()
	for range cfg.Concurrency {
		wg.Go(func() {
			for batch := range batches {
				start := time.Now()
				_, err := client.Apply(ctx, connect.NewRequest(&podv1.ApplyRequest{Manifest: manifest(batch)}))
				mu.Lock()
				for _, name := range batch {
					starts[name] = start
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("apply %s..: %w", batch[0], err))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	recordErrs(r, "apply", errs)
	return starts, t0
}

// deleteAll deletes every pod with the given number of concurrent callers.
func deleteAll(ctx context.Context, client podv1connect.PodServiceClient, names []string, concurrency int, r *Result) {
	work := make(chan string)
	go func() {
		defer close(work)
		for _, name := range names {
			work <- name
		}
	}()
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for range concurrency {
		wg.Go(func() {
			for name := range work {
				_, err := client.Delete(ctx, connect.NewRequest(&podv1.DeleteRequest{Namespace: "default", Name: name}))
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("delete %s: %w", name, err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	recordErrs(r, "delete", errs)
}

// recordErrs keeps the first few errors and a count, so a run where every
// call failed stays readable.
func recordErrs(r *Result, what string, errs []error) {
	const keep = 3
	for i, err := range errs {
		if i == keep {
			r.fail(fmt.Errorf("%s: %d more errors", what, len(errs)-keep))
			break
		}
		r.fail(err)
	}
}
