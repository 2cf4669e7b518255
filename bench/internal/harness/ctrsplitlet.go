package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"connectrpc.com/connect"
	"go.uber.org/zap"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/stack"
	podv1 "github.com/splitlet/splitlet/proto/splitlet/pod/v1"
	"github.com/splitlet/splitlet/proto/splitlet/pod/v1/podv1connect"
)

// splitletCtr is one round of the splitlet side: the three processes, the
// gateway's cri backend in front of containerd, a PodService client and
// watch, and a direct containerd client for what only the runtime knows
// (the containers' started_at).
type splitletCtr struct {
	cfg        CtrConfig
	rt         runtimeapi.RuntimeServiceClient // containerd, directly
	client     podv1connect.PodServiceClient
	obs        *podObserver
	metricsURL string
}

// runSplitletCtr starts fresh processes for the round, runs both modes on
// them, and stops them. The gateway's metrics are scraped around each
// mode for the CRI calls sync made through it.
func runSplitletCtr(ctx context.Context, cfg CtrConfig, rt runtimeapi.RuntimeServiceClient, round int) []SideRun {
	failed := func(err error) []SideRun {
		var out []SideRun
		for _, mode := range []string{ModeConcurrent, ModeSequential} {
			r := SideRun{Side: SideSplitlet, Mode: mode, Round: round, RPCSource: "gateway"}
			r.fail(err)
			out = append(out, r)
		}
		return out
	}
	dir, err := os.MkdirTemp(cfg.WorkDir, fmt.Sprintf("splitlet-bench-ctr-%d-", round))
	if err != nil {
		return failed(err)
	}
	var st *stack.Stack
	var runs []SideRun
	defer func() {
		if st != nil {
			st.Stop()
		}
		clean := cleanRuntime(ctx, rt)
		ok := clean == nil
		for i := range runs {
			ok = ok && len(runs[i].Errors) == 0
		}
		if clean != nil && len(runs) > 0 {
			runs[len(runs)-1].fail(clean)
		}
		if !cfg.Keep && ok {
			_ = os.RemoveAll(dir)
		}
	}()

	st, conn, err := startStack(ctx, Config{BinDir: cfg.BinDir}, stackOptions{dir: dir, n: cfg.N, runtimeEndpoint: cfg.Endpoint, metrics: true})
	if err != nil {
		return failed(err)
	}
	defer conn.Close()
	procs := st.Processes()

	octx, ocancel := context.WithCancel(ctx)
	defer ocancel()
	client, err := newPodClient(st.SyncDial())
	if err != nil {
		return failed(err)
	}
	s := &splitletCtr{cfg: cfg, rt: rt, client: client,
		metricsURL: "http://" + st.GatewayMetricsAddr + "/metrics"}
	s.obs = newPodObserver(s.client)
	watching := make(chan struct{})
	go s.obs.run(octx, watching)
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		return failed(fmt.Errorf("PodService.Watch not subscribed after 10s"))
	}
	for _, mode := range []string{ModeConcurrent, ModeSequential} {
		r := s.run(ctx, mode, round)
		r.fail(checkAlive(procs))
		runs = append(runs, r)
	}
	return runs
}

// run applies the mode's pods, measures them, and deletes them.
func (s *splitletCtr) run(ctx context.Context, mode string, round int) SideRun {
	r := SideRun{Side: SideSplitlet, Mode: mode, Round: round, RPCSource: "gateway", Load: LoadAvg()}
	names := ctrPodNames(SideSplitlet, mode, round, s.cfg.N)
	before, err := scrapeOps(ctx, s.metricsURL)
	r.fail(err)
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	starts := map[string]time.Time{}
	if mode == ModeConcurrent {
		var res Result
		one := func(batch []string) string { return ctrPodManifest(batch[0], s.cfg.Image, s.cfg.HostNetwork) }
		starts, _ = applyAll(rctx, s.client, names, Config{Concurrency: len(names), Batch: 1}, one, &res)
		r.Errors = append(r.Errors, res.Errors...)
		r.fail(s.obs.running.wait(rctx, names))
	} else {
		for _, name := range names {
			starts[name] = time.Now()
			if _, err := s.client.Apply(rctx, connect.NewRequest(&podv1.ApplyRequest{Manifest: ctrPodManifest(name, s.cfg.Image, s.cfg.HostNetwork)})); err != nil {
				r.fail(fmt.Errorf("apply %s: %w", name, err))
				break
			}
			if err := s.obs.running.wait(rctx, []string{name}); err != nil {
				r.fail(err)
				break
			}
		}
	}
	after, err := scrapeOps(ctx, s.metricsURL)
	r.fail(err)
	r.RPCs = diffOps(before, after)

	running := map[string]time.Time{}
	for _, name := range names {
		if at, ok := s.obs.running.get(name); ok {
			running[name] = at
		}
	}
	startedAt, err := containerStarts(ctx, s.rt)
	r.fail(err)
	ds, missing := perPod(names, starts, startedAt)
	r.RuntimeStart = summarize(ds, missing)
	ds, missing = perPod(names, starts, running)
	r.Running = summarize(ds, missing)
	r.WallRuntimeStart = wallSeconds(names, starts, startedAt)
	r.WallRunning = wallSeconds(names, starts, running)
	logctx.From(ctx).Info("splitlet run done", zap.String("mode", mode), zap.Int("round", round))

	// Deleting goes through sync, as a user would.
	var res Result
	dctx, dcancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer dcancel()
	deleteAll(dctx, s.client, names, len(names), &res)
	r.Errors = append(r.Errors, res.Errors...)
	r.fail(s.obs.gone.wait(dctx, names))
	// Remove now what sync leaves for its garbage collector, as the
	// direct side does after each run, so that the next run does not
	// share containerd with sync's removals.
	r.fail(cleanRuntime(ctx, s.rt))
	return r
}

// containerStarts returns, by bench pod name, when containerd started the
// pod's running container (ContainerStatus started_at).
func containerStarts(ctx context.Context, rt runtimeapi.RuntimeServiceClient) (map[string]time.Time, error) {
	resp, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := make(map[string]time.Time, len(resp.GetContainers()))
	for _, c := range resp.GetContainers() {
		st, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetId()})
		if err != nil {
			return out, fmt.Errorf("status of %s: %w", c.GetId(), err)
		}
		out[c.GetLabels()["io.kubernetes.pod.name"]] = time.Unix(0, st.GetStatus().GetStartedAt())
	}
	return out, nil
}

// scrapeOps reads the gateway's per-method call counts and durations.
func scrapeOps(ctx context.Context, url string) (gatewayOps, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("gateway metrics: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("gateway metrics: %w", err)
	}
	return parseGatewayOps(string(b)), nil
}
