package harness

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/splitlet/splitlet/internal/stack"
)

// stackOptions are the parts of a bench run's stack that differ between
// runs.
type stackOptions struct {
	dir string
	// n sizes admission's node: n+10 pods.
	n int
	// runtimeEndpoint selects the gateway's cri backend (containerd runs);
	// empty runs the fake backend with the bench image preloaded.
	runtimeEndpoint string
	// gatewayOnly starts the gateway alone (the kubelet run).
	gatewayOnly bool
	// metrics serves the gateway's /metrics even without profiling.
	metrics bool
}

// startStack starts the processes with the project's launcher and returns
// them with the bench's own connection to the gateway (the observers' CRI
// event stream; its receive limit fits 5000-pod listings). With profiling
// each process serves pprof: the gateway on its metrics address, admission
// and sync on their listen addresses. Admission's node has room for n+10
// pods and no hard eviction, so the machine's own disk and memory cannot
// evict bench pods; the fake runtime's CRI latency is set before any pod.
func startStack(ctx context.Context, cfg Config, o stackOptions) (*stack.Stack, *grpc.ClientConn, error) {
	profiling := cfg.ProfileDir != ""
	sc := stack.Config{
		BinDir:          cfg.BinDir,
		Dir:             o.dir,
		NodeName:        benchNode,
		RuntimeEndpoint: o.runtimeEndpoint,
		GatewayOnly:     o.gatewayOnly,
		// sync's or the kubelet's pod directories are in the run directory.
		GatewayArgs:   []string{"--allowed-host-path=" + o.dir, "--log-level=warn"},
		AdmissionArgs: []string{"--log-level=warn"},
		AdmissionConfig: fmt.Sprintf("node:\n  rootDir: %s\n  maxPods: %d\neviction:\n  hard: {}\n  nodeFsRoot: %s\n  imageFsRoot: %s\n",
			o.dir, o.n+10, o.dir, o.dir),
		SyncArgs:     []string{"--log-level=warn"},
		StartTimeout: 20 * time.Second,
		StopGrace:    10 * time.Second,
	}
	if o.runtimeEndpoint == "" {
		sc.GatewayArgs = append(sc.GatewayArgs, "--fake-preload-images="+preloadImages)
	} else {
		sc.GatewayArgs = append(sc.GatewayArgs, "--allow-host-network")
	}
	if profiling || o.metrics {
		sc.GatewayMetricsAddr = "127.0.0.1:0"
	}
	if profiling {
		sc.GatewayArgs = append(sc.GatewayArgs, "--profiling")
		sc.AdmissionArgs = append(sc.AdmissionArgs, "--profiling")
		sc.SyncArgs = append(sc.SyncArgs, "--profiling")
	}
	if cfg.TracingEndpoint != "" {
		arg := "--tracing-endpoint=" + cfg.TracingEndpoint
		sc.GatewayArgs = append(sc.GatewayArgs, arg)
		sc.AdmissionArgs = append(sc.AdmissionArgs, arg)
		sc.SyncArgs = append(sc.SyncArgs, arg)
	}
	sc.GatewayArgs = append(sc.GatewayArgs, cfg.GatewayArgs...)
	sc.AdmissionArgs = append(sc.AdmissionArgs, cfg.AdmissionArgs...)
	sc.SyncArgs = append(sc.SyncArgs, cfg.SyncArgs...)
	s, err := stack.Start(ctx, sc)
	if err != nil {
		return nil, nil, err
	}
	conn, err := dialGateway(s.GatewaySocket)
	if err != nil {
		s.Stop()
		return nil, nil, err
	}
	if cfg.Latency > 0 && o.runtimeEndpoint == "" {
		if err := setLatency(ctx, conn, cfg.Latency); err != nil {
			conn.Close()
			s.Stop()
			return nil, nil, fmt.Errorf("set fake latency: %w", err)
		}
	}
	return s, conn, nil
}

// profileTargets are the processes that serve pprof, by name.
func profileTargets(cfg Config, s *stack.Stack) map[string]string {
	if cfg.ProfileDir == "" {
		return nil
	}
	out := map[string]string{"gateway": "http://" + s.GatewayMetricsAddr}
	if s.Admission != nil {
		out["admission"] = "http://" + s.AdmissionAddr
	}
	if s.Sync != nil {
		out["sync"] = s.SyncURL()
	}
	return out
}

// pids maps each process's name to its pid, for the CPU and memory readings.
func pids(procs []*stack.Process) map[string]int {
	out := make(map[string]int, len(procs))
	for _, p := range procs {
		out[p.Name] = p.Pid()
	}
	return out
}

// checkAlive fails when a measured process has died: a bench must not
// measure a process that is gone.
func checkAlive(procs []*stack.Process) error {
	for _, p := range procs {
		if err := p.Exited(); err != nil {
			return err
		}
	}
	return nil
}

// httpOK is a readiness check: GET url answers 200.
func httpOK(url string) stack.Check { return stack.HTTPOK(url) }

// httpGet GETs url and fails unless it answers 200; the caller closes the
// body.
func httpGet(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp, nil
}

// freePort returns a loopback TCP port nobody listens on now, by the
// launcher's one rule.
func freePort() (int, error) {
	addr, err := stack.FreeAddr()
	if err != nil {
		return 0, err
	}
	var port int
	_, err = fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &port)
	return port, err
}
