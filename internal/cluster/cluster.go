package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/splitlet/splitlet/internal/stack"
)

// Binary names in Config.BinDir, as hack/lib/kube.sh builds them.
const (
	APIServerBinary         = "kube-apiserver"
	ControllerManagerBinary = "kube-controller-manager"
	SchedulerBinary         = "kube-scheduler"
	KubectlBinary           = "kubectl"
)

// Networks of the cluster. ServiceCIDR's first address is the kubernetes
// Service's, which the API server's serving certificate names; ClusterCIDR
// is what kube-controller-manager's node IPAM splits into one /24 pod CIDR
// per Node (spec.podCIDR).
const (
	ServiceCIDR = "10.96.0.0/16"
	ClusterCIDR = "10.244.0.0/16"
)

// Defaults of Config.
const (
	DefaultStartTimeout = 3 * time.Minute
	DefaultStopGrace    = 10 * time.Second
)

// Config says where the binaries are and where the cluster lives.
type Config struct {
	// BinDir holds kube-apiserver, kube-controller-manager and
	// kube-scheduler (hack/lib/kube.sh: $SPLITLET_CACHE/kubernetes-VERSION/bin).
	BinDir string
	// Dir holds the certificates, kubeconfigs, etcd's data, pid files and
	// logs (log/NAME.log); it is created, and must not hold a cluster.
	Dir string
	// Etcd is etcd's binary (default: etcd from PATH, Debian's etcd-server).
	Etcd string
	// StartTimeout bounds the whole start (default DefaultStartTimeout): a
	// cold kube-apiserver takes tens of seconds on a busy machine.
	StartTimeout time.Duration
	// StopGrace is each process's time after SIGTERM (default DefaultStopGrace).
	StopGrace time.Duration
	Logger    *zap.Logger
}

// Cluster is a running control plane: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, in that start order.
type Cluster struct {
	cfg Config
	pki *pki

	// Server is the API server's URL (https://127.0.0.1:PORT).
	Server string
	// AdminKubeconfig authenticates as system:masters.
	AdminKubeconfig string
	// CAFile is the cluster CA's certificate.
	CAFile string

	Etcd, APIServer, ControllerManager, Scheduler *stack.Process
}

// Start starts the control plane in cfg.Dir and returns once the API
// server is ready, both controllers are healthy, and the controllers have
// done what a user's first pod needs (the default namespace's service
// account and its kube-root-ca.crt ConfigMap exist). On error whatever was
// started is stopped.
func Start(ctx context.Context, cfg Config) (c *Cluster, retErr error) {
	if cfg.BinDir == "" || cfg.Dir == "" {
		return nil, errors.New("cluster: Config.BinDir and Config.Dir are required")
	}
	if cfg.Etcd == "" {
		cfg.Etcd = "etcd"
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
	etcd, err := exec.LookPath(cfg.Etcd)
	if err != nil {
		return nil, fmt.Errorf("etcd (Debian etcd-server): %w", err)
	}
	cfg.Etcd = etcd
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	cfg.Dir = dir
	if _, err := os.Stat(filepath.Join(dir, "pki", "ca.crt")); err == nil {
		return nil, fmt.Errorf("cluster: %s holds a cluster already; stop it and remove the directory", dir)
	}
	for _, d := range []string{filepath.Join(dir, "log"), filepath.Join(dir, "etcd")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	c = &Cluster{cfg: cfg}
	defer func() {
		if retErr != nil {
			c.Stop()
		}
	}()
	if err := c.writePKI(); err != nil {
		return c, err
	}
	admin, err := c.adminClient()
	if err != nil {
		return c, err
	}
	if err := c.startEtcd(ctx); err != nil {
		return c, err
	}
	if err := c.startAPIServer(ctx, admin); err != nil {
		return c, err
	}
	if err := c.startControllerManager(ctx); err != nil {
		return c, err
	}
	if err := c.startScheduler(ctx); err != nil {
		return c, err
	}
	for _, path := range []string{
		"/api/v1/namespaces/default/serviceaccounts/default",
		"/api/v1/namespaces/default/configmaps/kube-root-ca.crt",
	} {
		if err := c.waitFor(ctx, c.ControllerManager, httpOK(admin, c.Server+path)); err != nil {
			return c, fmt.Errorf("kube-controller-manager has not created %s: %w\n%s", path, err, c.ControllerManager.Tail(30))
		}
	}
	cfg.Logger.Info("control plane ready", zap.String("server", c.Server), zap.String("kubeconfig", c.AdminKubeconfig))
	return c, nil
}

func (c *Cluster) path(name string) string { return filepath.Join(c.cfg.Dir, name) }

// writePKI makes the CA, the API server's serving certificate and one
// client certificate per control-plane client.
func (c *Cluster) writePKI() error {
	p, err := newPKI(c.path("pki"))
	if err != nil {
		return err
	}
	c.pki = p
	c.CAFile = p.path("ca.crt")
	// The first address of the service range is the kubernetes Service's.
	if err := p.issue("apiserver", certSpec{
		commonName: "kube-apiserver",
		ips:        []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)},
		dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		server: true,
	}); err != nil {
		return err
	}
	for _, id := range clientIdentities {
		if err := p.issue(id.name, certSpec{commonName: id.user, organization: id.groups}); err != nil {
			return err
		}
	}
	return nil
}

// clientIdentities are the control plane's clients: certificate name ->
// user and groups, as kubeadm names them.
var clientIdentities = []struct {
	name, user string
	groups     []string
}{
	{"admin", "kubernetes-admin", []string{"system:masters"}},
	{"controller-manager", "system:kube-controller-manager", nil},
	{"scheduler", "system:kube-scheduler", nil},
	// The API server's client to the nodes' HTTPS API (logs, exec).
	{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}},
}

// writeKubeconfigs writes admin, controller-manager and scheduler
// kubeconfigs for c.Server.
func (c *Cluster) writeKubeconfigs() error {
	for _, name := range []string{"admin", "controller-manager", "scheduler"} {
		if err := c.pki.writeKubeconfig(c.path(name+".kubeconfig"), c.Server, name); err != nil {
			return err
		}
	}
	c.AdminKubeconfig = c.path("admin.kubeconfig")
	return os.WriteFile(c.path("server"), []byte(c.Server+"\n"), 0o644)
}

// Open returns the cluster a detached start left running in dir, for
// NodeKubeconfig and its paths; its processes are not known (nil).
func Open(dir string) (*Cluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: Config{Dir: dir}}
	if c.pki, err = loadPKI(c.path("pki")); err != nil {
		return nil, fmt.Errorf("no cluster in %s: %w", dir, err)
	}
	raw, err := os.ReadFile(c.path("server"))
	if err != nil {
		return nil, fmt.Errorf("no cluster in %s: %w", dir, err)
	}
	c.Server = strings.TrimSpace(string(raw))
	c.AdminKubeconfig, c.CAFile = c.path("admin.kubeconfig"), c.pki.path("ca.crt")
	return c, nil
}

// NodeKubeconfig writes a kubeconfig for node's identity — a client
// certificate with CN system:node:NODE in group system:nodes, signed by the
// cluster CA — and returns its path. The Node authorizer and the
// NodeRestriction admission plugin confine that identity to its own Node,
// Lease and pods.
func (c *Cluster) NodeKubeconfig(node string) (string, error) {
	name := "node-" + node
	if err := c.pki.issue(name, certSpec{commonName: "system:node:" + node, organization: []string{"system:nodes"}}); err != nil {
		return "", err
	}
	path := c.path(name + ".kubeconfig")
	return path, c.pki.writeKubeconfig(path, c.Server, name)
}

// NodeServingCert issues node's serving certificate for its HTTPS API (the
// kubelet's --tls-cert-file/--tls-private-key-file), signed by the cluster
// CA, which the API server verifies (--kubelet-certificate-authority)
// before it proxies logs and exec to the node. It names the node and ips,
// and returns the certificate's and key's paths.
func (c *Cluster) NodeServingCert(node string, ips []net.IP) (certFile, keyFile string, err error) {
	name := "node-" + node + "-serving"
	if err := c.pki.issue(name, certSpec{commonName: "system:node:" + node, organization: []string{"system:nodes"},
		dnsNames: []string{node}, ips: ips, server: true}); err != nil {
		return "", "", err
	}
	return c.pki.path(name + ".crt"), c.pki.path(name + ".key"), nil
}

// adminClient is an HTTPS client authenticated as the admin, for health
// checks; it is made before the API server runs, from the files.
func (c *Cluster) adminClient() (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(c.pki.path("admin.crt"), c.pki.path("admin.key"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(c.pki.caCert)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}}, nil
}

// insecureClient checks the health endpoints of kube-controller-manager and
// kube-scheduler, which serve self-signed certificates made at start.
var insecureClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a health check of a loopback self-signed server
}}

func httpOK(client *http.Client, url string) stack.Check {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// waitFor polls check until it passes, p exits, or ctx ends.
func (c *Cluster) waitFor(ctx context.Context, p *stack.Process, check stack.Check) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := p.Exited(); err != nil {
			return err
		}
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// launch starts a binary, records its pid (for StopDetached) and waits
// until ready passes, within what is left of the start timeout.
func (c *Cluster) launch(ctx context.Context, name, bin string, ready stack.Check, args ...string) (*stack.Process, error) {
	timeout := time.Until(deadline(ctx))
	p, err := stack.StartProcess(ctx, name, bin, c.path(filepath.Join("log", name+".log")), ready, timeout, args...)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.path(name+".pid"), []byte(strconv.Itoa(p.Pid())), 0o644); err != nil {
		p.Stop(c.cfg.StopGrace)
		return nil, err
	}
	c.cfg.Logger.Info("started", zap.String("process", name), zap.Int("pid", p.Pid()), zap.String("log", p.LogPath))
	return p, nil
}

func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(DefaultStartTimeout)
}

// loopbackPort is a free port on 127.0.0.1.
func loopbackPort() (string, error) {
	addr, err := stack.FreeAddr()
	if err != nil {
		return "", err
	}
	_, port, err := net.SplitHostPort(addr)
	return port, err
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	client, err := loopbackPort()
	if err != nil {
		return err
	}
	peer, err := loopbackPort()
	if err != nil {
		return err
	}
	clientURL, peerURL := "http://127.0.0.1:"+client, "http://127.0.0.1:"+peer
	c.Etcd, err = c.launch(ctx, "etcd", c.cfg.Etcd, httpOK(http.DefaultClient, clientURL+"/health"),
		"--name=splitlet", "--data-dir="+c.path("etcd"),
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=splitlet="+peerURL,
	)
	return err
}

// etcdURL is the client URL startEtcd gave etcd.
func (c *Cluster) etcdURL() string {
	for _, a := range c.Etcd.Args {
		if v, ok := strings.CutPrefix(a, "--advertise-client-urls="); ok {
			return v
		}
	}
	return ""
}

// startAPIServer runs kube-apiserver with its default admission plugins
// (ServiceAccount among them) plus NodeRestriction, which is off by default
// and which kubeadm turns on, and the Node and RBAC authorizers.
func (c *Cluster) startAPIServer(ctx context.Context, admin *http.Client) error {
	port, err := loopbackPort()
	if err != nil {
		return err
	}
	c.Server = "https://127.0.0.1:" + port
	if err := c.writeKubeconfigs(); err != nil {
		return err
	}
	p := c.pki.path
	c.APIServer, err = c.launch(ctx, "kube-apiserver", filepath.Join(c.cfg.BinDir, APIServerBinary),
		httpOK(admin, c.Server+"/readyz"),
		"--etcd-servers="+c.etcdURL(),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+port,
		"--tls-cert-file="+p("apiserver.crt"), "--tls-private-key-file="+p("apiserver.key"),
		"--client-ca-file="+p("ca.crt"),
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--enable-bootstrap-token-auth=true",
		"--allow-privileged=true",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p("sa.pub"),
		"--service-account-signing-key-file="+p("sa.key"),
		"--service-cluster-ip-range="+ServiceCIDR,
		"--kubelet-client-certificate="+p("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+p("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+p("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
	)
	return err
}

// startControllerManager runs every default controller (deployment,
// replicaset, job, endpointslice, garbage collector, node lifecycle, node
// IPAM, service-account tokens, CSR signing and approval, ...) plus the
// bootstrap-token ones, each with its own service account.
func (c *Cluster) startControllerManager(ctx context.Context) error {
	port, err := loopbackPort()
	if err != nil {
		return err
	}
	kc := c.path("controller-manager.kubeconfig")
	p := c.pki.path
	c.ControllerManager, err = c.launch(ctx, "kube-controller-manager", filepath.Join(c.cfg.BinDir, ControllerManagerBinary),
		httpOK(insecureClient, "https://127.0.0.1:"+port+"/healthz"),
		"--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--bind-address=127.0.0.1", "--secure-port="+port, "--cert-dir="+c.path("controller-manager"),
		"--leader-elect=false",
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+p("sa.key"),
		"--root-ca-file="+p("ca.crt"),
		"--cluster-signing-cert-file="+p("ca.crt"), "--cluster-signing-key-file="+p("ca.key"),
		"--allocate-node-cidrs=true", "--cluster-cidr="+ClusterCIDR, "--node-cidr-mask-size=24",
		"--service-cluster-ip-range="+ServiceCIDR,
	)
	return err
}

func (c *Cluster) startScheduler(ctx context.Context) error {
	port, err := loopbackPort()
	if err != nil {
		return err
	}
	kc := c.path("scheduler.kubeconfig")
	c.Scheduler, err = c.launch(ctx, "kube-scheduler", filepath.Join(c.cfg.BinDir, SchedulerBinary),
		httpOK(insecureClient, "https://127.0.0.1:"+port+"/healthz"),
		"--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--bind-address=127.0.0.1", "--secure-port="+port, "--cert-dir="+c.path("scheduler"),
		"--leader-elect=false",
	)
	return err
}

// Processes are the started processes, in start order.
func (c *Cluster) Processes() []*stack.Process {
	var out []*stack.Process
	for _, p := range []*stack.Process{c.Etcd, c.APIServer, c.ControllerManager, c.Scheduler} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// Stop stops the processes in reverse start order. It is safe to call more
// than once.
func (c *Cluster) Stop() {
	ps := c.Processes()
	for i := len(ps) - 1; i >= 0; i-- {
		ps[i].Stop(c.cfg.StopGrace)
		_ = os.Remove(c.path(ps[i].Name + ".pid"))
	}
}

// processNames are the control plane's processes in stop order.
var processNames = []string{"kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"}

// StopDetached stops a control plane that a detached start left running in
// dir, by its pid files, in the order Stop uses, and reports which
// processes it stopped.
func StopDetached(dir string, grace time.Duration) ([]string, error) {
	var stopped []string
	for _, name := range processNames {
		pidFile := filepath.Join(dir, name+".pid")
		raw, err := os.ReadFile(pidFile)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return stopped, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil {
			return stopped, fmt.Errorf("%s: %w", pidFile, err)
		}
		if stack.StopPid(pid, name, grace) {
			stopped = append(stopped, name)
		}
		_ = os.Remove(pidFile)
	}
	return stopped, nil
}
