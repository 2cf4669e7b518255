package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The containerd comparison (RunContainerd): N one-container busybox pods
// on a real containerd, started once by issuing the CRI calls sync issues
// directly against containerd ("direct"), and once through splitlet's three
// processes, the gateway's cri backend in front of the same containerd
// ("splitlet"). The ratio of the two is the cost of the split.

// Sides and modes of the comparison.
const (
	SideDirect   = "direct"
	SideSplitlet = "splitlet"
	// ModeConcurrent issues every pod at once; ModeSequential one pod
	// after the previous one is running.
	ModeConcurrent = "concurrent"
	ModeSequential = "sequential"
)

// Metrics compared between the sides, each measured per pod from its
// start (the direct side's RunPodSandbox call, splitlet's Apply call).
const (
	// MetricRuntimeStart ends at the container's start as containerd
	// records it (ContainerStatus started_at).
	MetricRuntimeStart = "runtime_start"
	// MetricRunning ends when the caller sees the container running: the
	// direct side's first ContainerStatus saying RUNNING, splitlet's
	// PodService.Watch showing the container running.
	MetricRunning = "running"
)

// CtrConfig is one containerd comparison.
type CtrConfig struct {
	// Endpoint is containerd's CRI endpoint, unix:///path/containerd.sock.
	Endpoint string
	// BinDir holds splitlet-gateway, splitlet-admission and splitlet-sync.
	BinDir string
	// N pods per run; Rounds runs of each side and mode, the sides
	// alternating first and second from round to round.
	N      int
	Rounds int
	// Image is the busybox image, already in containerd's k8s.io namespace
	// (nothing can be pulled here).
	Image string
	// HostNetwork runs the pods on the node's network; false needs CNI in
	// containerd's configuration.
	HostNetwork bool
	// Timeout bounds each run's wait for its pods running, and for gone.
	Timeout time.Duration
	// WorkDir is where per-run directories are made ("" = os.TempDir());
	// Keep leaves them with the processes' logs.
	WorkDir string
	Keep    bool
}

func (c *CtrConfig) validate() error {
	switch {
	case !strings.HasPrefix(c.Endpoint, "unix://"):
		return fmt.Errorf("containerd endpoint %q: want unix:///path", c.Endpoint)
	case c.N < 1 || c.Rounds < 1:
		return errors.New("pods and rounds must be at least 1")
	case c.Rounds%2 != 0:
		// containerd gets slower as it ages through a run (CreateContainer
		// 9 ms in the first run, 16-18 ms by the fourth), so the side that
		// goes second in a round is measured on an older containerd. With
		// an even number of rounds each side goes first equally often.
		return fmt.Errorf("rounds must be even so that each side goes first as often as the other, got %d", c.Rounds)
	case c.Image == "":
		return errors.New("no image")
	case c.Timeout <= 0:
		return errors.New("the timeout must be positive")
	}
	return nil
}

// CtrReport is the JSON file of a containerd comparison.
type CtrReport struct {
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	Host        Host      `json:"host"`
	Runtime     string    `json:"runtime"`
	N           int       `json:"n"`
	Rounds      int       `json:"rounds"`
	Image       string    `json:"image"`
	HostNetwork bool      `json:"host_network"`
	// Runs are every side's every mode in every round, in the order run.
	Runs []SideRun `json:"runs"`
	// Comparisons are the medians over rounds and their ratios.
	Comparisons []Comparison `json:"comparisons"`
}

// SideRun is one side's N pods in one mode and round. Durations are per
// pod from its start; the wall times are from the first pod's start to the
// last pod's end.
type SideRun struct {
	Side  string `json:"side"`
	Mode  string `json:"mode"`
	Round int    `json:"round"`
	// RuntimeStart and Running are the two compared metrics.
	RuntimeStart Summary `json:"runtime_start"`
	Running      Summary `json:"running"`
	// StartReturned ends when StartContainer returned (direct only).
	StartReturned *Summary `json:"start_returned,omitempty"`
	// WallRuntimeStart and WallRunning are in seconds.
	WallRuntimeStart float64 `json:"wall_runtime_start_s"`
	WallRunning      float64 `json:"wall_running_s"`
	// RPCs are the CRI calls made during the run: timed by the caller on
	// the direct side, by the gateway (its Prometheus histogram, so it
	// includes containerd's time) on splitlet's.
	RPCs      map[string]RPCStat `json:"rpcs"`
	RPCSource string             `json:"rpc_source"`
	Load      string             `json:"loadavg_before"`
	Errors    []string           `json:"errors,omitempty"`
}

func (r *SideRun) fail(err error) {
	if err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
}

// Figures are one side's medians over rounds (or a ratio of them).
type Figures struct {
	P50MS       float64 `json:"p50_ms"`
	MaxMS       float64 `json:"max_ms"`
	WallSeconds float64 `json:"wall_s"`
}

// Comparison is one mode and metric: each side's medians over the rounds
// without errors, and splitlet's divided by direct's.
type Comparison struct {
	Mode     string  `json:"mode"`
	Metric   string  `json:"metric"`
	Rounds   int     `json:"rounds"`
	Direct   Figures `json:"direct"`
	Splitlet Figures `json:"splitlet"`
	Ratio    Figures `json:"ratio"`
}

// compare builds the comparison of one mode and metric from the runs;
// runs with errors or missing pods are left out.
func compare(runs []SideRun, mode, metric string) Comparison {
	c := Comparison{Mode: mode, Metric: metric}
	side := func(name string) (Figures, int) {
		var p50, pmax, wall []float64
		for _, r := range runs {
			if r.Side != name || r.Mode != mode || len(r.Errors) > 0 {
				continue
			}
			s, w := r.RuntimeStart, r.WallRuntimeStart
			if metric == MetricRunning {
				s, w = r.Running, r.WallRunning
			}
			if s.Count == 0 || s.Missing > 0 {
				continue
			}
			p50, pmax, wall = append(p50, s.P50), append(pmax, s.Max), append(wall, w)
		}
		return Figures{P50MS: median(p50), MaxMS: median(pmax), WallSeconds: median(wall)}, len(p50)
	}
	var nd, ns int
	c.Direct, nd = side(SideDirect)
	c.Splitlet, ns = side(SideSplitlet)
	c.Rounds = min(nd, ns)
	c.Ratio = Figures{
		P50MS:       ratio(c.Splitlet.P50MS, c.Direct.P50MS),
		MaxMS:       ratio(c.Splitlet.MaxMS, c.Direct.MaxMS),
		WallSeconds: ratio(c.Splitlet.WallSeconds, c.Direct.WallSeconds),
	}
	return c
}

// RunContainerd runs the comparison: a warm-up pod, then Rounds rounds of
// both sides (the first side alternating, against order effects such as
// the page cache), each side running the concurrent then the sequential
// mode. Every run's row is printed to w as it completes, then the
// comparisons. The report is returned even when err is set.
func RunContainerd(ctx context.Context, cfg CtrConfig, w io.Writer) (CtrReport, error) {
	rep := CtrReport{Started: time.Now().UTC(), Host: NewHost(), N: cfg.N, Rounds: cfg.Rounds,
		Image: cfg.Image, HostNetwork: cfg.HostNetwork}
	if err := cfg.validate(); err != nil {
		return rep, err
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = os.TempDir()
	}
	conn, err := dialCRI(cfg.Endpoint)
	if err != nil {
		return rep, err
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	img := runtimeapi.NewImageServiceClient(conn)
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	v, err := rt.Version(vctx, &runtimeapi.VersionRequest{})
	cancel()
	if err != nil {
		return rep, fmt.Errorf("containerd at %s: %w", cfg.Endpoint, err)
	}
	rep.Runtime = v.GetRuntimeName() + " " + v.GetRuntimeVersion()
	if st, err := img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: cfg.Image}}); err != nil || st.GetImage() == nil {
		return rep, fmt.Errorf("image %s is not in containerd's k8s.io namespace (import it; nothing can be pulled): %v", cfg.Image, err)
	}
	// Leftovers of an interrupted run would be relisted by sync and
	// slow every pod down.
	if err := cleanRuntime(ctx, rt); err != nil {
		return rep, err
	}
	d := &directSide{cfg: cfg, rt: rt, img: img, dns: hostDNS()}
	// One pod through both code paths of containerd before measuring:
	// the first sandbox of a fresh containerd pays for loading the
	// image's snapshot and the runtime's binaries.
	if warm := d.run(ctx, ModeSequential, 0, 1); len(warm.Errors) > 0 {
		return rep, fmt.Errorf("warm-up pod: %s", strings.Join(warm.Errors, "; "))
	}

	printCtrHeader(w, rep)
	for round := 1; round <= cfg.Rounds; round++ {
		sides := []string{SideDirect, SideSplitlet}
		if round%2 == 0 {
			sides = []string{SideSplitlet, SideDirect}
		}
		for _, side := range sides {
			var runs []SideRun
			if side == SideDirect {
				for _, mode := range []string{ModeConcurrent, ModeSequential} {
					runs = append(runs, d.run(ctx, mode, round, cfg.N))
				}
			} else {
				runs = runSplitletCtr(ctx, cfg, rt, round)
			}
			for _, r := range runs {
				printSideRun(w, r)
			}
			rep.Runs = append(rep.Runs, runs...)
			if ctx.Err() != nil {
				rep.Finished = time.Now().UTC()
				return rep, ctx.Err()
			}
		}
	}
	for _, mode := range []string{ModeConcurrent, ModeSequential} {
		for _, metric := range []string{MetricRuntimeStart, MetricRunning} {
			rep.Comparisons = append(rep.Comparisons, compare(rep.Runs, mode, metric))
		}
	}
	printComparisons(w, rep)
	rep.Finished = time.Now().UTC()
	rep.Host.LoadAfter = LoadAvg()
	return rep, nil
}

// dialCRI opens a gRPC connection to a CRI endpoint (unix:///path).
func dialCRI(endpoint string) (*grpc.ClientConn, error) {
	return grpc.NewClient(endpoint,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
}

// hostDNS is the DNS config of a pod inheriting the host's resolv.conf.
func hostDNS() *runtimeapi.DNSConfig {
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return &runtimeapi.DNSConfig{}
	}
	return parseResolvConf(string(b))
}

// benchSandboxes selects the sandboxes of both sides' bench pods.
var benchSandboxes = &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "bench"}}

// cleanRuntime stops and removes every bench sandbox (with its
// containers), so each run starts from an empty runtime. Only sandboxes
// labelled app=bench are touched.
func cleanRuntime(ctx context.Context, rt runtimeapi.RuntimeServiceClient) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: benchSandboxes})
	if err != nil {
		return fmt.Errorf("clean runtime: %w", err)
	}
	var errs []error
	for _, sb := range resp.GetItems() {
		// A sandbox sync is removing at the same time may be gone: its
		// NotFound is fine, so only a sandbox still listed after the
		// calls counts as a failure.
		_, _ = rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.GetId()})
		_, _ = rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.GetId()})
	}
	left, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: benchSandboxes})
	if err != nil {
		return fmt.Errorf("clean runtime: %w", err)
	}
	for _, sb := range left.GetItems() {
		errs = append(errs, fmt.Errorf("clean runtime: sandbox %s (%s) still there", sb.GetId(), sb.GetMetadata().GetName()))
	}
	// containerd goes on cleaning up after removals (metadata garbage
	// collection, snapshot directories); a run started at once shares the
	// machine with that work: CreateContainer took 5 ms or 10 ms depending
	// on how soon after a cleanup it ran. Every run of either side starts
	// after the same pause, whoever removed the pods (sync removes its own
	// as well).
	time.Sleep(ctrSettle)
	return errors.Join(errs...)
}

// ctrSettle is how long a run waits after removing the previous run's pods.
const ctrSettle = 3 * time.Second

// ctrPodNames names a run's pods, e.g. ctr-d-c1-00 for the direct side's
// first pod of the concurrent mode in round 1; names differ between runs so
// that a pod still being deleted never meets its successor.
func ctrPodNames(side, mode string, round, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("ctr-%c-%c%d-%02d", side[0], mode[0], round, i)
	}
	return out
}

// wallSeconds is the first start to the latest end among names, 0 when
// none ended.
func wallSeconds(names []string, starts map[string]time.Time, ends map[string]time.Time) float64 {
	var first, last time.Time
	for _, n := range names {
		if s, ok := starts[n]; ok && (first.IsZero() || s.Before(first)) {
			first = s
		}
		if e, ok := ends[n]; ok && e.After(last) {
			last = e
		}
	}
	if first.IsZero() || last.IsZero() {
		return 0
	}
	return last.Sub(first).Seconds()
}

// perPod returns each name's end minus its start, and how many names have
// no end (or no start).
func perPod(names []string, starts, ends map[string]time.Time) ([]time.Duration, int) {
	var out []time.Duration
	missing := 0
	for _, n := range names {
		s, ok1 := starts[n]
		e, ok2 := ends[n]
		if !ok1 || !ok2 {
			missing++
			continue
		}
		out = append(out, e.Sub(s))
	}
	return out, missing
}
