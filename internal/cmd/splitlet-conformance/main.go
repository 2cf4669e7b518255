// Command splitlet-conformance runs Kubernetes' e2e suite against one node
// of a control plane on this machine (package conformance) and compares two
// runs. hack/conformance.sh (`make conformance`) builds what it needs and
// runs it inside a network namespace of its own.
//
//	splitlet-conformance [flags] run                  run the suite against --node
//	splitlet-conformance compare KUBELET.xml SPLITLET.xml  print both runs' figures and the specs that pass only on the kubelet
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/conformance"
)

func main() {
	code, err := run(os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "splitlet-conformance:", err)
		if code == 0 {
			code = 2
		}
	}
	os.Exit(code)
}

// run returns 1 when specs failed on splitlet (the run itself worked) and 2
// with an error when it did not.
func run(args []string, out io.Writer) (int, error) {
	self, _ := os.Executable()
	fs := flag.NewFlagSet("splitlet-conformance", flag.ContinueOnError)
	var cfg conformance.Config
	node := fs.String("node", string(conformance.Splitlet), "the node agent: splitlet or kubelet")
	fs.StringVar(&cfg.KubeBin, "kube-bin", "", "directory of kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet, e2e.test and ginkgo (hack/lib/kube.sh's $KUBE_BIN_DIR)")
	fs.StringVar(&cfg.SplitletBin, "bin", filepath.Dir(self), "directory of splitlet's binaries")
	fs.StringVar(&cfg.Dir, "dir", "_out/conformance/splitlet", "the run's state, logs and report (report/junit_01.xml); must not exist or be empty")
	fs.StringVar(&cfg.RuntimeEndpoint, "runtime-endpoint", "", "the node's containerd, unix:///...")
	fs.StringVar(&cfg.Focus, "focus", `\[NodeConformance\]`, "ginkgo focus: a regular expression over spec names")
	fs.StringVar(&cfg.Skip, "skip", `\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Slow\]`, "ginkgo skip: a regular expression over spec names")
	fs.IntVar(&cfg.Procs, "procs", 4, "parallel ginkgo processes")
	fs.DurationVar(&cfg.Timeout, "timeout", 2*time.Hour, "longest the suite may run")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: splitlet-conformance [flags] run | compare KUBELET.xml SPLITLET.xml")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	switch fs.Arg(0) {
	case "run":
		cfg.Node = conformance.NodeKind(*node)
		if cfg.KubeBin == "" || cfg.RuntimeEndpoint == "" {
			return 2, errors.New("--kube-bin and --runtime-endpoint are required")
		}
		var err error
		if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
			return 2, err
		}
		if entries, _ := os.ReadDir(cfg.Dir); len(entries) > 0 {
			return 2, fmt.Errorf("--dir %s is not empty: each run starts from nothing", cfg.Dir)
		}
		log, err := zap.NewDevelopment()
		if err != nil {
			return 2, err
		}
		defer func() { _ = log.Sync() }()
		cfg.Logger, cfg.Out = log, out
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		res, err := conformance.Run(ctx, cfg)
		if err != nil {
			return 2, err
		}
		conformance.PrintRun(out, string(cfg.Node), res)
		if res.Count(conformance.Failed) > 0 {
			return 1, nil
		}
		return 0, nil
	case "compare":
		if fs.NArg() != 3 {
			return 2, errors.New("compare needs KUBELET.xml and SPLITLET.xml")
		}
		kubelet, err := conformance.ReadJUnit(fs.Arg(1))
		if err != nil {
			return 2, err
		}
		splitlet, err := conformance.ReadJUnit(fs.Arg(2))
		if err != nil {
			return 2, err
		}
		regressions := conformance.PrintComparison(out, kubelet, splitlet)
		if len(regressions) > 0 {
			return 1, nil
		}
		return 0, nil
	}
	fs.Usage()
	return 2, fmt.Errorf("unknown command %q", fs.Arg(0))
}
