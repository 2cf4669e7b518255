package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/splitlet/splitlet/internal/stack"
)

// TestMain starts a gateway with the cri backend in front of the containerd
// of SPLITLET_CONTAINERD_ENDPOINT, through the project's launcher, unless
// SPLITLET_GATEWAY_ENDPOINT already names a running one. Without either the
// tests skip and say why.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	endpoint := os.Getenv(stack.EnvContainerd)
	if endpoint == "" || os.Getenv("SPLITLET_GATEWAY_ENDPOINT") != "" {
		return m.Run()
	}
	s, stop, err := stack.ForTestMain(context.Background(), stack.Config{
		RuntimeEndpoint: endpoint,
		GatewayOnly:     true,
		GatewayArgs:     []string{"--allow-host-network", "--allowed-host-path=/var/lib/splitlet", "--log-level=debug"},
	}, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the gateway:", err)
		return 1
	}
	os.Setenv("SPLITLET_GATEWAY_ENDPOINT", "unix://"+s.GatewaySocket)
	code := m.Run()
	stop(code)
	return code
}
