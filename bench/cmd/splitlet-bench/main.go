// Command splitlet-bench measures pod start latency, throughput, steady-state
// cost and deletion time of splitlet's three processes on the fake backend,
// and optionally of the real kubelet beside it. With -runtime containerd it
// instead compares pod start on a real containerd through splitlet with the
// same CRI calls issued directly. See package harness.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/bench/internal/harness"
	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/internal/tracing/tracetest"
)

func main() {
	cfg := harness.Config{}
	var ns, kubeletNs, out string
	flag.StringVar(&ns, "n", "110,1000,5000", "comma-separated pod counts for splitlet; each runs with fresh processes")
	flag.DurationVar(&cfg.Steady, "steady", 60*time.Second, "steady-state window after the burst (0 skips it)")
	flag.DurationVar(&cfg.Latency, "latency", 0, "latency the fake backend adds to every CRI call")
	flag.IntVar(&cfg.Concurrency, "concurrency", 32, "Apply (and Delete) calls in flight")
	flag.IntVar(&cfg.Batch, "batch", 1, "pods per Apply (a multi-document manifest)")
	flag.DurationVar(&cfg.Timeout, "timeout", 5*time.Minute, "longest wait for all pods running, and for all gone")
	flag.StringVar(&cfg.BinDir, "bin", "bin", "directory holding splitlet-gateway, splitlet-admission and splitlet-sync")
	flag.StringVar(&cfg.Kubelet, "kubelet", "", "kubelet binary for the side-by-side run (empty: skip)")
	flag.StringVar(&kubeletNs, "kubelet-n", "110", "comma-separated pod counts for the kubelet")
	flag.DurationVar(&cfg.KubeletPodsInterval, "kubelet-pods-interval", 0, "how often the kubelet's /pods is read for its status point (0: 1 ms per pod, at least 100 ms; negative: not read)")
	flag.Func("kubelet-arg", "a flag added to the kubelet's command line (repeatable), e.g. -kubelet-arg=--v=4", func(v string) error {
		cfg.KubeletArgs = append(cfg.KubeletArgs, v)
		return nil
	})
	for _, a := range []struct {
		name string
		to   *[]string
	}{{"sync-arg", &cfg.SyncArgs}, {"gateway-arg", &cfg.GatewayArgs}, {"admission-arg", &cfg.AdmissionArgs}} {
		flag.Func(a.name, "a flag added to splitlet's "+strings.TrimSuffix(a.name, "-arg")+" command line (repeatable), e.g. -sync-arg=--resync-interval=1m", func(v string) error {
			*a.to = append(*a.to, v)
			return nil
		})
	}
	flag.StringVar(&cfg.WorkDir, "workdir", "", "where per-run directories are made (default: $TMPDIR)")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep per-run directories and process logs (always kept for a run with errors)")
	flag.StringVar(&out, "out", "results.json", "JSON results file")
	flag.StringVar(&cfg.ProfileDir, "profile", "", "directory for CPU profiles of each process during each burst (<process>-<n>.pprof) and steady window (<process>-<n>-steady.pprof), and its heap after the window (<process>-<n>-heap.pprof); runs them with --profiling")
	flag.IntVar(&cfg.ProfileSeconds, "profile-seconds", 10, "length of each burst profile")
	nodeNet := flag.String("node-net", "private", "-runtime fake: private: run every process in new network and mount namespaces where the node has an address, a default route and a hostname that resolves (needs root; the harness re-executes itself); host: this machine's own network, as it is")
	verbose := flag.Bool("v", false, "log progress to stderr")
	flag.StringVar(&cfg.TracingEndpoint, "tracing-endpoint", "", "OTLP/gRPC endpoint given to every process as --tracing-endpoint (sampling 1.0); empty: tracing off")
	tracingSink := flag.Bool("tracing-sink", false, "trace every process (sampling 1.0) to an OTLP receiver in the harness that counts the spans and keeps none")
	runtime := flag.String("runtime", "fake", "fake: splitlet on the gateway's fake backend (and the kubelet); containerd: splitlet vs direct CRI calls on a real containerd")
	ctr := harness.CtrConfig{}
	flag.StringVar(&ctr.Endpoint, "containerd-endpoint", "", "containerd's CRI endpoint for -runtime containerd (unix:///path)")
	flag.IntVar(&ctr.Rounds, "rounds", 4, "-runtime containerd: rounds of each side, alternating which goes first (even)")
	flag.StringVar(&ctr.Image, "image", "docker.io/library/busybox:1.36", "-runtime containerd: busybox image already in containerd (hack/images.sh)")
	flag.BoolVar(&ctr.HostNetwork, "host-network", true, "-runtime containerd: run the pods on the host network (false needs CNI)")
	flag.Parse()

	var err error
	if cfg.Ns, err = parseInts(ns); err != nil {
		fail(fmt.Errorf("-n: %w", err))
	}
	if cfg.KubeletNs, err = parseInts(kubeletNs); err != nil {
		fail(fmt.Errorf("-kubelet-n: %w", err))
	}
	// The node network is for the fake-backend runs, where the kubelet is
	// measured; the containerd comparison keeps the machine's network (its
	// containerd and host-network pods live there). The process that is
	// not yet inside it only re-executes itself there and waits.
	if *nodeNet != "private" && *nodeNet != "host" {
		fail(fmt.Errorf("-node-net %q: want private or host", *nodeNet))
	}
	useNodeNet := *runtime == "fake" && *nodeNet == "private"
	if useNodeNet && !harness.InNodeNet() {
		code, err := harness.RunInNodeNet(context.Background())
		if err != nil {
			fail(err)
		}
		os.Exit(code)
	}
	logger := zap.NewNop()
	if *verbose {
		if logger, err = zap.NewDevelopment(); err != nil {
			fail(err)
		}
	}
	if cfg.ProfileDir != "" {
		// The harness shares the cores with what it measures; its own
		// profile says what it costs.
		stopProfile, err := profileSelf(filepath.Join(cfg.ProfileDir, "harness.pprof"))
		if err != nil {
			fail(err)
		}
		defer stopProfile()
	}
	if *tracingSink {
		sink, err := tracetest.StartDiscarding()
		if err != nil {
			fail(err)
		}
		defer func() { fmt.Printf("tracing sink: %d spans received\n", sink.Count()); sink.Stop() }()
		cfg.TracingEndpoint = sink.Addr()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logctx.With(ctx, logger)

	if *runtime == "containerd" {
		ctr.BinDir, ctr.Timeout, ctr.WorkDir, ctr.Keep = cfg.BinDir, cfg.Timeout, cfg.WorkDir, cfg.Keep
		// 20 pods unless -n says otherwise (its default is the fake's).
		ctr.N = 20
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "n" && len(cfg.Ns) > 0 {
				ctr.N = cfg.Ns[0]
			}
		})
		rep, err := harness.RunContainerd(ctx, ctr, os.Stdout)
		if werr := harness.WriteJSON(out, rep); werr != nil {
			fail(werr)
		}
		fmt.Printf("load average before %s, after %s; results in %s\n", rep.Host.LoadBefore, rep.Host.LoadAfter, out)
		if err != nil {
			fail(err)
		}
		return
	}
	if *runtime != "fake" {
		fail(fmt.Errorf("-runtime %q: want fake or containerd", *runtime))
	}
	if useNodeNet {
		dir, err := os.MkdirTemp(cfg.WorkDir, "splitlet-bench-node-net-")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(dir)
		if err := harness.SetupNodeNet(dir); err != nil {
			fail(err)
		}
		cfg.NodeIP = harness.NodeIP
	}

	rep := harness.Report{Started: time.Now().UTC(), Host: harness.NewHost(), Concurrency: cfg.Concurrency, Batch: cfg.Batch}
	rep.Host.NodeNet = *nodeNet
	rep.Results, err = harness.Run(ctx, cfg, os.Stdout)
	rep.Finished = time.Now().UTC()
	rep.Host.LoadAfter = harness.LoadAvg()
	if werr := harness.WriteJSON(out, rep); werr != nil {
		fail(werr)
	}
	fmt.Printf("load average before %s, after %s; results in %s\n", rep.Host.LoadBefore, rep.Host.LoadAfter, out)
	if err != nil {
		fail(err)
	}
}

// profileSelf writes this process's CPU profile to path until the returned
// function is called.
func profileSelf(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("profile the harness: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "splitlet-bench:", err)
	os.Exit(1)
}
