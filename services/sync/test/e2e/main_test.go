package e2e

import (
	"os"
	"testing"

	"github.com/splitlet/splitlet/internal/stack"
)

// TestMain starts the gateway (cri backend, in front of the containerd of
// SPLITLET_CONTAINERD_ENDPOINT) and sync through the project's launcher,
// unless SPLITLET_SYNC_ADDR already names a running sync. Without either
// the tests skip and say why. Short relist and resync periods and a 1 s
// crash-loop back-off (hidden flag; the kubelet's is 10 s) keep the restart
// scenario fast; the behaviour is the same.
func TestMain(m *testing.M) {
	os.Exit(stack.RunContainerdTests(m, stack.Config{
		NodeName:    "e2e",
		NoAdmission: true,
		// Its streaming-proxy counters tell the exec test the streams
		// went through it.
		GatewayMetricsAddr: "127.0.0.1:0",
		GatewayArgs:        []string{"--allow-host-network", "--allowed-host-path=" + allowedHostPath, "--log-level=debug"},
		SyncArgs: []string{
			"--relist-interval=500ms",
			"--resync-interval=2s",
			"--crashloop-backoff-base=1s",
			"--max-container-restart-period=4s", "--image-pull-backoff-max=4s",
			"--log-level=debug",
		},
	}, func(s *stack.Stack) {
		launched = s
		os.Setenv("SPLITLET_SYNC_ADDR", s.SyncAddr)
		os.Setenv("SPLITLET_TOKEN", s.Token)
		os.Setenv("SPLITLET_GATEWAY_ENDPOINT", "unix://"+s.GatewaySocket)
		os.Setenv("SPLITLET_POD_LOGS_ROOT", s.LogsDir)
		os.Setenv("SPLITLET_GATEWAY_METRICS", "http://"+s.GatewayMetricsAddr)
	}, "SPLITLET_SYNC_ADDR"))
}

// allowedHostPath is where the gateway's policy allows pods' hostPath
// volumes (besides sync's state directory).
const allowedHostPath = "/var/lib/splitlet"

// launched is the stack TestMain started (nil when the environment named
// one), for the tests that kill and restart its processes.
var launched *stack.Stack
