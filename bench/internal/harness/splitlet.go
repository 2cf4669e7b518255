package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/zap"

	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

// benchNode is the node name given to sync, admission and the kubelet.
const benchNode = "benchnode"

// runSplitlet is one splitlet run at n pods: fresh processes and
// directories, burst, steady state, deletion.
func runSplitlet(ctx context.Context, cfg Config, n int) (r Result) {
	r = Result{System: "splitlet", N: n, Latency: cfg.Latency.String()}
	log := logFrom(ctx).With(zap.String("system", r.System), zap.Int("n", n))
	dir, err := runDir(cfg, r.System, n)
	if err != nil {
		r.fail(err)
		return r
	}
	r.Dir = dir
	defer cleanup(ctx, cfg, &r)
	var procs []*process
	defer func() {
		stopAll(procs, 10*time.Second)
	}()

	gw, conn, socket, err := startGateway(ctx, cfg, dir, dir)
	if err != nil {
		r.fail(err)
		return r
	}
	procs = append(procs, gw)
	defer conn.Close()

	adm, admURL, err := startAdmission(ctx, cfg, dir, n)
	if err != nil {
		r.fail(err)
		return r
	}
	procs = append(procs, adm)

	sy, syncURL, notes, err := startSync(ctx, cfg.BinDir, dir, socket, admURL, cfg.ProfileDir != "")
	r.Notes = append(r.Notes, notes...)
	if err != nil {
		r.fail(err)
		return r
	}
	procs = append(procs, sy)

	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	client := newPodClient(syncURL)
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
	profiled := startProfiles(ctx, cfg, n, procs)
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
		r.Steady, err = sampleWindow(ctx, all, cfg.Steady, time.Second)
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

// startSync starts splitlet-sync on the gateway's socket, calling
// admission at admURL when it can, and waits for its /healthz. The notes
// say how the setup differed from the full one.
func startSync(ctx context.Context, binDir, dir, socket, admURL string, profiling bool) (*process, string, []string, error) {
	syncPort, err := freePort()
	if err != nil {
		return nil, "", nil, err
	}
	syncBin := filepath.Join(binDir, "splitlet-sync")
	args := []string{
		fmt.Sprintf("--listen=127.0.0.1:%d", syncPort),
		"--runtime-endpoint=unix://" + socket,
		"--state-dir=" + filepath.Join(dir, "sync"),
		"--pod-logs-root=" + filepath.Join(dir, "pods-logs"),
		"--node-name=" + benchNode,
		"--log-level=warn",
	}
	var notes []string
	// sync calls admission once it has the flag; until then admission runs
	// idle and is measured as such (the report says which).
	if hasFlag(syncBin, "admission-endpoint") {
		args = append(args, "--admission-endpoint="+admURL)
	} else {
		notes = append(notes, syncBin+" has no --admission-endpoint: sync did not call admission")
	}
	profiling = profiling && hasFlag(syncBin, "profiling")
	if profiling {
		args = append(args, "--profiling")
	}
	sy, err := startProcess(ctx, dir, "sync", syncBin, args...)
	if err != nil {
		return nil, "", notes, err
	}
	syncURL := fmt.Sprintf("http://127.0.0.1:%d", syncPort)
	if profiling {
		sy.debugURL = syncURL
	}
	if err := sy.waitReady(ctx, 20*time.Second, httpOK(syncURL+"/healthz")); err != nil {
		sy.stop(5 * time.Second)
		return nil, "", notes, err
	}
	return sy, syncURL, notes, nil
}

// startAdmission writes admission's configuration (node capacity n+10 pods,
// hard eviction off so the machine's own disk and memory use cannot evict
// bench pods) and starts it.
func startAdmission(ctx context.Context, cfg Config, dir string, n int) (*process, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	conf := fmt.Sprintf(`listen: 127.0.0.1:%d
logLevel: warn
node:
  name: %s
  rootDir: %s
  maxPods: %d
eviction:
  hard: {}
  nodeFsRoot: %s
  imageFsRoot: %s
`, port, benchNode, dir, n+10, dir, dir)
	path := filepath.Join(dir, "admission.yaml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, "", err
	}
	bin := filepath.Join(cfg.BinDir, "splitlet-admission")
	args := []string{"--config=" + path}
	// Admission serves pprof on its one listener, beside /metrics.
	profiling := cfg.ProfileDir != "" && hasFlag(bin, "profiling")
	if profiling {
		args = append(args, "--profiling")
	}
	adm, err := startProcess(ctx, dir, "admission", bin, args...)
	if err != nil {
		return nil, "", err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	if profiling {
		adm.debugURL = url
	}
	if err := adm.waitReady(ctx, 20*time.Second, httpOK(url+"/metrics")); err != nil {
		adm.stop(5 * time.Second)
		return nil, "", err
	}
	return adm, url, nil
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

// hasFlag reports whether bin's -h output lists the flag.
func hasFlag(bin, flag string) bool {
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	return strings.Contains(string(out), "-"+flag)
}

func checkAlive(procs []*process) error {
	for _, p := range procs {
		if err := p.exited(); err != nil {
			return err
		}
	}
	return nil
}
