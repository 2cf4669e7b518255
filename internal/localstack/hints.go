package localstack

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/splitlet/splitlet/internal/stack"
)

// printHints tells a newcomer what to try next against the running stack.
func printHints(cfg Config, s *stack.Stack, backend string) {
	bin, run := rel(cfg.BinDir), rel(cfg.Dir)
	crictl := "crictl"
	if cfg.CrictlPath != "" {
		crictl = cfg.CrictlPath
	}
	stop := "Ctrl-C"
	if cfg.Detach {
		stop = "make stop"
	}
	metrics := ""
	if s.GatewayMetricsAddr != "" {
		metrics = fmt.Sprintf("\n  curl -s http://%s/metrics | grep splitlet_gateway_runtime_operations_total", s.GatewayMetricsAddr)
	}
	fmt.Fprintf(cfg.Out, `splitlet runs (backend: %[1]s, sync admits through admission).
Logs: %[3]s/{gateway,admission,sync}.log   container logs: %[3]s/logs/
Static pods: %[3]s/manifests/ (a copy of examples/static/; sync re-reads it on change)

Try next:
  set -a; . %[3]s/env; set +a        # SPLITLET_SERVER=%[4]s and the others
  %[2]s/splitctl get pods -w                      # watch: crashloop restarts, job completes
  %[2]s/splitctl describe pod crashloop           # Back-off restarting failed container
  %[2]s/splitctl logs web                         # the container's CRI log
  %[2]s/splitctl logs init-demo -c wait-config    # an init container's log
  %[2]s/splitctl exec web -- echo hello
  %[2]s/splitctl events
  %[2]s/splitctl delete pod web
  %[2]s/splitctl apply -f examples/web.yaml --wait

  # the PodService with Connect's JSON protocol (it needs the token):
  curl -s %[10]s-H "Authorization: Bearer $SPLITLET_TOKEN" \
    -H 'Content-Type: application/json' -d '{"namespace":"default","name":"web"}' \
    %[11]s/splitlet.pod.v1.PodService/Get

  # CRI, as sync sees it (make critest builds crictl into $SPLITLET_CACHE):
  %[5]s --runtime-endpoint unix://%[6]s ps -a%[7]s

  # a pod admission rejects (OutOfmemory), and admission's decisions:
  %[2]s/splitctl apply -f examples/admission/too-big.yaml; %[2]s/splitctl get pod too-big
  curl -s %[8]s/metrics | grep '^admission_admit_total'
  curl -s %[10]s%[11]s/metrics | grep -E '^kubelet_running_(pods|containers)'

Stop: %[9]s
`, backend, bin, run, s.SyncURL(), crictl, s.GatewaySocket, metrics, curlTarget(s.AdmissionAddr), stop, curlSocket(s.SyncAddr), curlBase(s.SyncAddr))
}

// rel is path relative to the working directory when it lies below it.
func rel(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// curlSocket is curl's --unix-socket option for a unix:// address, else "".
func curlSocket(addr string) string {
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		return "--unix-socket " + path + " "
	}
	return ""
}

// curlBase is the base URL curl is given for addr (host:port or unix://).
func curlBase(addr string) string {
	if strings.HasPrefix(addr, "unix://") {
		return "http://localhost"
	}
	return "http://" + addr
}

// curlTarget is curl's options and base URL for addr.
func curlTarget(addr string) string { return curlSocket(addr) + curlBase(addr) }
