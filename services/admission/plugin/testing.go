package plugin

import (
	"context"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"
)

// TestClient serves impl on an in-process gRPC server and returns the host's
// client for it, connected through go-plugin's TestPluginGRPCConn: requests
// are encoded, cross a real gRPC connection and are decoded exactly as with a
// child process, without building one. Everything is closed at the end of
// the test. Like a host after a start, it calls Describe, so that the
// client sends a plugin built on this SDK only changes of the active set.
func TestClient(t testing.TB, impl AdmissionPlugin) *GRPCClient {
	t.Helper()
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{
		PluginName: &GRPCPlugin{Impl: impl},
	})
	t.Cleanup(func() {
		// Server first: closing the client asks the server to stop itself
		// (go-plugin's controller Shutdown), and a second concurrent Stop
		// races inside go-plugin.
		server.Stop()
		_ = client.Close()
	})
	raw, err := client.Dispense(PluginName)
	if err != nil {
		t.Fatalf("dispense %s plugin: %v", PluginName, err)
	}
	c, ok := raw.(*GRPCClient)
	if !ok {
		t.Fatalf("dispensed %T, want *plugin.GRPCClient", raw)
	}
	// An error here is the implementation's Describe failing, which a
	// test may want; the client then sends whole sets.
	_, _ = c.Describe(context.Background())
	return c
}
