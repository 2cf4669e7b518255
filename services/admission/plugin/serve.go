package plugin

import (
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/splitlet/splitlet/services/admission/plugin/gctune"
)

// Serve serves impl as an admission plugin and returns when the host closes
// the connection or kills the process. It is meant to be the whole of a
// plugin's main. Run outside a host (without the handshake cookie in the
// environment), it prints that the binary is a plugin and exits with status 1.
//
// Log to stderr, preferably through hclog's JSON format: the host reads the
// plugin's stderr into its own logs.
//
// Unless GOGC is set, Serve gives the plugin the admission process's heap
// ballast (gctune.Apply): a plugin's live heap is small, and at the
// runtime's minimum heap goal its collections would come every couple of
// hundred admissions and delay the ones they meet.
func Serve(impl AdmissionPlugin) {
	gctune.Apply()
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins: map[string]goplugin.Plugin{
			PluginName: &GRPCPlugin{Impl: impl},
		},
		// Setting GRPCServer is what makes go-plugin serve gRPC; without it
		// the plugin would offer only net/rpc, which the host refuses.
		GRPCServer: newGRPCServer,
	})
}

// requestWindow is the HTTP/2 flow-control window of the plugin's server. An
// Admit request with a full node's active pods is over 100 KiB, above
// HTTP/2's default 64 KiB window, so the host would stall for a window
// update round trip in the middle of every request; a fixed window of a few
// MiB lets a request go in one flight.
const requestWindow = 4 << 20

func newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return goplugin.DefaultGRPCServer(append(opts,
		grpc.InitialWindowSize(requestWindow),
		grpc.InitialConnWindowSize(requestWindow),
	))
}
