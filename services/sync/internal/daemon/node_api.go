package daemon

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"

	"github.com/splitlet/splitlet/internal/logctx"
	"github.com/splitlet/splitlet/services/sync/internal/apiserver"
	"github.com/splitlet/splitlet/services/sync/internal/config"
	"github.com/splitlet/splitlet/services/sync/internal/nodeapi"
)

// checkpointsDirName is the directory under --state-dir where /checkpoint
// has the runtime write its archives (the kubelet's
// DefaultKubeletCheckpointsDirName under its root directory).
const checkpointsDirName = "checkpoints"

// nodeAPI is the kubelet's node API as sync serves it: its server, bound to
// its listener (so the port is known before the Node is registered), and
// the loop that reloads the client CA and a serving certificate from files.
type nodeAPI struct {
	srv    *http.Server
	ln     net.Listener
	reload func(ctx context.Context)
}

// port is the TCP port the node API listens on, for the Node's
// status.daemonEndpoints.kubeletEndpoint.
func (n *nodeAPI) port() int32 {
	return int32(n.ln.Addr().(*net.TCPAddr).Port)
}

// newNodeAPI builds the node API and binds its listener: TLS from the
// configured certificate or a self-signed one under <state-dir>/pki,
// authentication and authorization from the API server (kubeClient) and
// the client CA; stats from summary; /metrics from reg and
// /metrics/probes from probeReg.
func newNodeAPI(ctx context.Context, cfg config.Config, kubeClient kubernetes.Interface, pods nodeapi.PodLister, rt nodeapi.Runtime, summary nodeapi.SummaryProvider, reg *prometheus.Registry, probeReg prometheus.Gatherer) (*nodeAPI, error) {
	authOpts := nodeapi.AuthOptions{ClientCAFile: cfg.ClientCAFile, Anonymous: cfg.AnonymousAuth}
	if kubeClient != nil {
		authOpts.Client = kubeClient
	}
	auth, runAuth, err := nodeapi.BuildAuth(authOpts)
	if err != nil {
		return nil, fmt.Errorf("node API: %w", err)
	}
	var ips []net.IP
	for _, s := range cfg.NodeIPs {
		if ip := net.ParseIP(s); ip != nil {
			ips = append(ips, ip)
		}
	}
	tlsOpts := nodeapi.TLSOptions{
		CertFile: cfg.NodeAPITLSCertFile, KeyFile: cfg.NodeAPITLSKeyFile,
		CertDir: cfg.CertDir, Host: cfg.NodeName, IPs: ips,
		RequestClientCert: cfg.ClientCAFile != "",
	}
	run := runAuth
	switch {
	case cfg.RotateServerCertificates:
		m, err := apiserver.NewServingCertManager(ctx, kubeClient, cfg.NodeName, apiserver.NodeAddresses(cfg.NodeIPs, hostname()), cfg.CertDir)
		if err != nil {
			return nil, fmt.Errorf("node API: %w", err)
		}
		tlsOpts.Current = m.Current
	case cfg.NodeAPITLSCertFile != "" && cfg.NodeAPITLSKeyFile != "":
		// Re-read when the files change (ReloadKubeletServerCertificateFile).
		f, err := nodeapi.NewFileCert(cfg.NodeAPITLSCertFile, cfg.NodeAPITLSKeyFile)
		if err != nil {
			return nil, err
		}
		tlsOpts.Current = f.Current
		run = func(ctx context.Context) {
			var wg sync.WaitGroup
			wg.Go(func() { f.Run(ctx) })
			runAuth(ctx)
			wg.Wait()
		}
	}
	tlsConfig, err := nodeapi.TLSConfig(tlsOpts)
	if err != nil {
		return nil, fmt.Errorf("node API: %w", err)
	}
	// The kubelet's <root-dir>/checkpoints, made at start-up as its
	// setupDataDirs does with ContainerCheckpoint on.
	checkpointDir := filepath.Join(cfg.StateDir, checkpointsDirName)
	if err := os.MkdirAll(checkpointDir, 0o700); err != nil {
		return nil, fmt.Errorf("node API: creating the checkpoint directory: %w", err)
	}
	h := nodeapi.New(nodeapi.Options{NodeName: cfg.NodeName, Pods: pods, Runtime: rt, Stats: summary, Metrics: reg,
		StreamMetrics: nodeapi.NewStreamMetrics(reg), ProbeMetrics: probeReg, Auth: auth, Flags: cfg.Flags,
		CheckpointDir: checkpointDir, SystemLogDir: cfg.SystemLogDir, SystemLogQuery: cfg.SystemLogQuery})
	log := logctx.From(ctx).With(zap.String("server", "node-api"))
	srv := nodeapi.NewHTTPServer(cfg.NodeAPIAddr, withLogger(log, h), tlsConfig)
	srv.ErrorLog = zap.NewStdLog(log)
	ln, err := net.Listen("tcp", cfg.NodeAPIAddr)
	if err != nil {
		return nil, fmt.Errorf("node API: listen %s: %w", cfg.NodeAPIAddr, err)
	}
	return &nodeAPI{srv: srv, ln: ln, reload: run}, nil
}

// withLogger puts log in every request's context.
func withLogger(log *zap.Logger, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(logctx.With(r.Context(), log)))
	})
}
