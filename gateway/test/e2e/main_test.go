package e2e

import (
	"os"
	"testing"

	"github.com/splitlet/splitlet/internal/stack"
)

// TestMain starts a gateway with the cri backend in front of the containerd
// of SPLITLET_CONTAINERD_ENDPOINT, through the project's launcher, unless
// SPLITLET_GATEWAY_ENDPOINT already names a running one. Without either the
// tests skip and say why.
func TestMain(m *testing.M) {
	os.Exit(stack.RunContainerdTests(m, stack.Config{
		GatewayOnly: true,
		GatewayArgs: []string{"--allow-host-network", "--allowed-host-path=/var/lib/splitlet", "--log-level=debug"},
	}, func(s *stack.Stack) {
		os.Setenv("SPLITLET_GATEWAY_ENDPOINT", "unix://"+s.GatewaySocket)
	}, "SPLITLET_GATEWAY_ENDPOINT"))
}
