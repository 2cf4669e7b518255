package kubeletnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/stack"
)

// Defaults of Config.
const (
	DefaultClusterDomain = "cluster.local"
	DefaultStartTimeout  = 2 * time.Minute
	DefaultStopGrace     = 10 * time.Second
)

// Config says which kubelet to run, for which node, against which runtime.
type Config struct {
	// KubeletBin is the kubelet binary (hack/lib/kube.sh: $KUBE_BIN_DIR/kubelet).
	KubeletBin string
	// Dir holds everything the kubelet writes: root/ (its --root-dir),
	// pod-logs/, pki/ (its --cert-dir), kubelet-config.json and
	// kubelet.log. It is created.
	Dir string
	// NodeName is the Node the kubelet registers (--hostname-override); it
	// must match Kubeconfig's identity, system:node:NodeName.
	NodeName string
	// NodeIP is the Node's InternalIP (--node-ip), where the kubelet
	// listens and the API server reaches it. The kubelet refuses loopback
	// and link-local addresses and one no interface has.
	NodeIP string
	// Kubeconfig is the node's credential (cluster.NodeKubeconfig).
	Kubeconfig string
	// RuntimeEndpoint is the CRI endpoint, unix:///path/containerd.sock.
	RuntimeEndpoint string
	// ClientCAFile verifies client certificates, the API server's
	// kubelet-client one among them (cluster.Cluster.CAFile).
	ClientCAFile string
	// TLSCertFile and TLSKeyFile are the kubelet's serving certificate and
	// key (tlsCertFile, tlsPrivateKeyFile). The API server checks it
	// against its --kubelet-certificate-authority before it proxies logs,
	// exec or port-forward, so it must be signed by that CA (the cluster's)
	// and name NodeIP. Empty, the kubelet makes a self-signed one in
	// Dir/pki, which such an API server refuses.
	TLSCertFile, TLSKeyFile string
	// Port is the kubelet's HTTPS API port on NodeIP (0: a free one).
	Port int
	// HealthzPort is the port of /healthz on 127.0.0.1 (0: a free one).
	HealthzPort int
	// CgroupRoot is the cgroup the kubelet's kubepods hierarchy goes under
	// (default /kubelet-NodeName). It is created at start and removed at
	// stop, in every cgroup hierarchy.
	CgroupRoot string
	// ClusterDomain (default DefaultClusterDomain) and ClusterDNS are the
	// pods' DNS settings; without ClusterDNS, ClusterFirst pods fall back
	// to the node's resolv.conf.
	ClusterDomain string
	ClusterDNS    []string
	// ExtraArgs are appended to the kubelet's flags (--node-labels, --v).
	ExtraArgs []string
	// StartTimeout bounds the wait for /healthz (default DefaultStartTimeout).
	StartTimeout time.Duration
	// StopGrace is the kubelet's time after SIGTERM (default DefaultStopGrace).
	StopGrace time.Duration
	Logger    *zap.Logger
}

// Node is a running kubelet.
type Node struct {
	cfg    Config
	layout layout
	// tunables are the kernel settings before the kubelet changed them.
	tunables map[string]string

	// Name and IP are the Node's name and InternalIP.
	Name, IP string
	// Port is the kubelet's HTTPS API port on IP; HealthzURL its health
	// endpoint on loopback.
	Port       int
	HealthzURL string
	// ConfigFile is the KubeletConfiguration the kubelet runs with.
	ConfigFile string
	Process    *stack.Process
}

// layout is where the kubelet's files live under Config.Dir.
type layout struct {
	dir, root, podLogs, pki, config, log string
}

func newLayout(dir string) layout {
	return layout{
		dir:     dir,
		root:    filepath.Join(dir, "root"),
		podLogs: filepath.Join(dir, "pod-logs"),
		pki:     filepath.Join(dir, "pki"),
		config:  filepath.Join(dir, "kubelet-config.json"),
		log:     filepath.Join(dir, "kubelet.log"),
	}
}

// Start writes the kubelet's configuration, creates
// its cgroup root, starts it and returns once its /healthz answers. The
// Node registers and turns Ready a few seconds later, once the kubelet has
// synced with the API server and the runtime reports its network ready:
// callers wait for that through the API. On error whatever was started or
// created is undone.
func Start(ctx context.Context, cfg Config) (n *Node, retErr error) {
	if cfg.KubeletBin == "" || cfg.Dir == "" || cfg.NodeName == "" || cfg.NodeIP == "" ||
		cfg.Kubeconfig == "" || cfg.RuntimeEndpoint == "" || cfg.ClientCAFile == "" {
		return nil, errors.New("kubeletnode: Config.KubeletBin, Dir, NodeName, NodeIP, Kubeconfig, RuntimeEndpoint and ClientCAFile are required")
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return nil, errors.New("kubeletnode: Config.TLSCertFile and TLSKeyFile go together")
	}
	if net.ParseIP(cfg.NodeIP) == nil {
		return nil, fmt.Errorf("kubeletnode: NodeIP %q is not an IP address", cfg.NodeIP)
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = "/kubelet-" + cfg.NodeName
	}
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = DefaultClusterDomain
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.StopGrace == 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	l := newLayout(dir)
	for _, d := range []string{l.root, l.podLogs, l.pki} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, err
		}
	}
	if cfg.Port == 0 {
		if cfg.Port, err = freePort(cfg.NodeIP); err != nil {
			return nil, fmt.Errorf("kubeletnode: a port on NodeIP %s: %w", cfg.NodeIP, err)
		}
	}
	if cfg.HealthzPort == 0 {
		if cfg.HealthzPort, err = freePort("127.0.0.1"); err != nil {
			return nil, err
		}
	}
	if err := newKubeletConfiguration(cfg, l).write(l.config); err != nil {
		return nil, err
	}

	n = &Node{
		cfg: cfg, layout: l,
		Name: cfg.NodeName, IP: cfg.NodeIP, Port: cfg.Port,
		HealthzURL: "http://127.0.0.1:" + strconv.Itoa(cfg.HealthzPort) + "/healthz",
		ConfigFile: l.config,
	}
	defer func() {
		if retErr != nil {
			if err := n.Stop(); err != nil {
				cfg.Logger.Warn("clean up after a failed start", zap.Error(err))
			}
		}
	}()
	if n.tunables, err = readTunables(procSys); err != nil {
		return n, fmt.Errorf("kubeletnode: %w", err)
	}
	if err := createCgroupRoot(cgroupfsRoot, cfg.CgroupRoot); err != nil {
		return n, fmt.Errorf("kubeletnode: cgroup root %s: %w", cfg.CgroupRoot, err)
	}
	args := append([]string{
		"--config=" + l.config,
		"--kubeconfig=" + cfg.Kubeconfig,
		"--root-dir=" + l.root,
		"--cert-dir=" + l.pki,
		"--hostname-override=" + cfg.NodeName,
		"--node-ip=" + cfg.NodeIP,
		"--v=2",
	}, cfg.ExtraArgs...)
	n.Process, err = stack.StartProcess(ctx, "kubelet", cfg.KubeletBin, l.log, stack.HTTPOK(n.HealthzURL), cfg.StartTimeout, args...)
	if err != nil {
		return n, fmt.Errorf("kubeletnode: %w", err)
	}
	cfg.Logger.Info("kubelet started", zap.String("node", cfg.NodeName), zap.Int("pid", n.Process.Pid()),
		zap.String("address", net.JoinHostPort(cfg.NodeIP, strconv.Itoa(cfg.Port))), zap.String("log", l.log))
	return n, nil
}

// Stop stops the kubelet, then undoes what it leaves on the machine: its
// mounts under Config.Dir (its root directory, which it bind-mounts onto
// itself to make it shared, and its pods' volumes), its links in
// /var/log/containers, its cgroup root and the kernel settings it changed
// (a kubelet still running reads them only at its start). The pods'
// containers are the runtime's: a stopped kubelet leaves them running, and
// a cgroup that still holds one is not removed (the error says which). It
// is safe to call more than once.
func (n *Node) Stop() error {
	if n.Process != nil {
		n.Process.Stop(n.cfg.StopGrace)
	}
	return errors.Join(
		unmountUnder(n.layout.dir),
		removeLogLinks(legacyContainerLogsDir, n.layout.podLogs),
		removeCgroupRoot(cgroupfsRoot, n.cfg.CgroupRoot),
		restoreTunables(procSys, n.tunables),
	)
}

// LogPath is the kubelet's log.
func (n *Node) LogPath() string { return n.layout.log }

// freePort is a port nobody listens on now on ip.
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
