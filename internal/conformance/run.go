package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/splitlet/splitlet/internal/cluster"
	"github.com/splitlet/splitlet/internal/kubeletnode"
	"github.com/splitlet/splitlet/internal/stack"
)

// NodeKind says which node agent runs the specs.
type NodeKind string

const (
	Splitlet NodeKind = "splitlet"
	Kubelet  NodeKind = "kubelet"
)

// Config says what to run the suite against.
type Config struct {
	Node NodeKind
	// KubeBin holds kube-apiserver, kube-controller-manager,
	// kube-scheduler, kubectl, kubelet, e2e.test and ginkgo
	// (hack/lib/kube.sh's $KUBE_BIN_DIR).
	KubeBin string
	// SplitletBin holds splitlet's binaries (bin/).
	SplitletBin string
	// Dir holds the control plane, the node's state, logs and the report
	// (Dir/report/junit_01.xml); it is created and must be empty.
	Dir string
	// RuntimeEndpoint is the node's containerd (unix://...).
	RuntimeEndpoint string
	// Focus and Skip are ginkgo regular expressions over spec names.
	Focus, Skip string
	// Procs is the number of parallel ginkgo processes (default 4): most
	// specs wait, so more than the machine's cores helps.
	Procs int
	// Timeout bounds the suite (default 2h).
	Timeout time.Duration
	// Out receives ginkgo's output.
	Out    io.Writer
	Logger *zap.Logger
}

// NodeName is the node's name in the cluster.
func (c Config) NodeName() string { return string(c.Node) + "-node" }

// NodeIP is the address the node reports and serves its API on:
// hack/conformance.sh puts it on the loopback device of the run's network
// namespace (TEST-NET-1, never routed elsewhere). The kubelet refuses a
// loopback node IP, and pods reach it through their bridge's gateway.
var NodeIP = net.IPv4(192, 0, 2, 10)

// Run starts the control plane and the node, waits until the node is
// Ready, runs the suite, stops everything and returns the report's
// results. A suite with failing specs is not an error: the results say so.
func Run(ctx context.Context, cfg Config) (Results, error) {
	if cfg.Procs == 0 {
		cfg.Procs = 4
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	log := cfg.Logger
	c, err := cluster.Start(ctx, cluster.Config{BinDir: cfg.KubeBin, Dir: filepath.Join(cfg.Dir, "cluster"), Logger: log})
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	defer c.Stop()
	procs, stop, err := startNode(ctx, cfg, c)
	if err != nil {
		return nil, fmt.Errorf("%s node: %w", cfg.Node, err)
	}
	defer stop()
	// A node process that dies mid-run (a panic, say) is a failure of the
	// run, not of the specs left: end the suite then and say which process
	// and where its log is, rather than let every later spec time out on
	// an unreachable node. (Registered after stop, so it is cancelled
	// before the node is stopped on purpose.)
	suiteCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchNode(suiteCtx, procs, cancel)
	if err := waitNodeReady(suiteCtx, c.AdminKubeconfig, cfg.NodeName(), 3*time.Minute); err != nil {
		return nil, nodeDied(suiteCtx, err)
	}
	log.Info("node ready; running the suite", zap.String("node", cfg.NodeName()), zap.String("focus", cfg.Focus))
	report := filepath.Join(cfg.Dir, "report")
	if err := runSuite(suiteCtx, cfg, c.AdminKubeconfig, report); err != nil {
		return nil, nodeDied(suiteCtx, err)
	}
	if err := nodeDied(suiteCtx, nil); err != nil {
		return nil, err
	}
	return ReadJUnit(filepath.Join(report, "junit_01.xml"))
}

// watchNode cancels ctx, with the process's exit as the cause, when any
// of procs ends before ctx is done.
func watchNode(ctx context.Context, procs []*stack.Process, cancel context.CancelCauseFunc) {
	for _, p := range procs {
		go func() {
			select {
			case <-p.Done():
				cancel(p.Exited())
			case <-ctx.Done():
			}
		}()
	}
}

// nodeDied is the error of a run whose node process ended under ctx
// (watchNode), else err.
func nodeDied(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, stack.ErrExited) {
		return fmt.Errorf("the node died during the run (the suite's report is partial): %w", cause)
	}
	return err
}

// startNode starts the node agent with the node's own identity and a
// serving certificate the API server verifies, and returns its processes
// and how to stop it.
func startNode(ctx context.Context, cfg Config, c *cluster.Cluster) (procs []*stack.Process, stop func(), err error) {
	name := cfg.NodeName()
	kubeconfig, err := c.NodeKubeconfig(name)
	if err != nil {
		return nil, nil, err
	}
	certFile, keyFile, err := c.NodeServingCert(name, []net.IP{NodeIP})
	if err != nil {
		return nil, nil, err
	}
	switch cfg.Node {
	case Splitlet:
		st, err := stack.Start(ctx, stack.Config{
			BinDir:          cfg.SplitletBin,
			Dir:             filepath.Join(cfg.Dir, "node"),
			NodeName:        name,
			RuntimeEndpoint: cfg.RuntimeEndpoint,
			// What the kubelet allows by default: the suite runs
			// privileged, host-namespace and hostPath pods.
			GatewayArgs: []string{"--allow-privileged", "--allow-host-pid", "--allow-host-ipc", "--allowed-host-path=/", "--allowed-capability=*"},
			SyncArgs: []string{
				"--kubeconfig=" + kubeconfig,
				// Untainted, as a kubelet registers: the suite's pods
				// do not tolerate splitlet's taint.
				"--register-with-taints=",
				"--node-ip=" + NodeIP.String(),
				"--node-api-addr=" + net.JoinHostPort(NodeIP.String(), "10250"),
				"--client-ca-file=" + c.CAFile,
				"--node-api-tls-cert-file=" + certFile,
				"--node-api-tls-private-key-file=" + keyFile,
			},
			Logger: cfg.Logger,
		})
		if err != nil {
			return nil, nil, err
		}
		return st.Processes(), st.Stop, nil
	case Kubelet:
		return startKubelet(ctx, cfg, c, kubeconfig, certFile, keyFile)
	}
	return nil, nil, fmt.Errorf("unknown node kind %q: %s or %s", cfg.Node, Splitlet, Kubelet)
}

// startKubelet starts a real kubelet of the version the control plane
// runs, with the same identity, certificate and address a splitlet node
// gets.
func startKubelet(ctx context.Context, cfg Config, c *cluster.Cluster, kubeconfig, certFile, keyFile string) ([]*stack.Process, func(), error) {
	n, err := kubeletnode.Start(ctx, kubeletnode.Config{
		KubeletBin:      filepath.Join(cfg.KubeBin, "kubelet"),
		Dir:             filepath.Join(cfg.Dir, "node"),
		NodeName:        cfg.NodeName(),
		NodeIP:          NodeIP.String(),
		Kubeconfig:      kubeconfig,
		RuntimeEndpoint: cfg.RuntimeEndpoint,
		ClientCAFile:    c.CAFile,
		TLSCertFile:     certFile,
		TLSKeyFile:      keyFile,
		Port:            10250,
		Logger:          cfg.Logger,
	})
	if err != nil {
		return nil, nil, err
	}
	return []*stack.Process{n.Process}, func() {
		if err := n.Stop(); err != nil {
			cfg.Logger.Warn("stopping the kubelet", zap.Error(err))
		}
	}, nil
}

// waitNodeReady polls the Node until its Ready condition is True.
func waitNodeReady(ctx context.Context, kubeconfig, name string, timeout time.Duration) error {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := "not registered"
	for {
		if n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
			last = "not Ready"
			for _, cond := range n.Status.Conditions {
				if cond.Type == v1.NodeReady {
					if cond.Status == v1.ConditionTrue {
						return nil
					}
					last = fmt.Sprintf("Ready=%s: %s", cond.Status, cond.Message)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s not Ready after %s: %s", name, timeout, last)
		case <-tick.C:
		}
	}
}

// runSuite runs e2e.test under the ginkgo CLI with the flags a one-node
// cluster without cloud provider or kube-system pods needs. A non-zero
// exit with a report written means specs failed, which the report says.
func runSuite(ctx context.Context, cfg Config, kubeconfig, report string) error {
	args := []string{
		"--procs=" + strconv.Itoa(cfg.Procs), "--timeout=" + cfg.Timeout.String(), "--no-color",
		"--focus=" + cfg.Focus,
	}
	if cfg.Skip != "" {
		args = append(args, "--skip="+cfg.Skip)
	}
	args = append(args, filepath.Join(cfg.KubeBin, "e2e.test"), "--",
		"--kubeconfig="+kubeconfig,
		"--provider=local",
		"--minStartupPods=0",
		"--allowed-not-ready-nodes=0",
		"--kubectl-path="+filepath.Join(cfg.KubeBin, "kubectl"),
		"--report-dir="+report,
		"--e2e-output-dir="+filepath.Join(cfg.Dir, "e2e-output"),
		"--dump-logs-on-failure=false",
	)
	cmd := exec.CommandContext(ctx, filepath.Join(cfg.KubeBin, "ginkgo"), args...)
	cmd.Stdout, cmd.Stderr = cfg.Out, cfg.Out
	cmd.Dir = cfg.Dir
	// ginkgo's e2e.test processes are its children: when the run is
	// cancelled, interrupt the whole group (ginkgo then ends the specs and
	// writes the report), and kill it if that takes too long.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
	cmd.WaitDelay = time.Minute
	err := cmd.Run()
	if _, statErr := os.Stat(filepath.Join(report, "junit_01.xml")); statErr == nil {
		return nil
	}
	if err == nil {
		err = errors.New("exited 0")
	}
	return fmt.Errorf("ginkgo wrote no report (%s): %w", filepath.Join(report, "junit_01.xml"), err)
}
