// Package plugin is the SDK for splitlet admission plugins: separate binaries
// that the admission service starts with hashicorp/go-plugin and asks, after
// its built-in handlers, whether a pod may run on the node.
//
// It holds everything both sides must agree on: the Handshake, the PluginMap,
// the AdmissionPlugin interface and the gRPC adapters between that interface
// and the splitlet.admission.plugin.v1.AdmissionPluginService wire API. A
// plugin's main is one call:
//
//	type allowAll struct{}
//
//	func (allowAll) Admit(ctx context.Context, r *plugin.Request) (*plugin.Response, error) {
//		return &plugin.Response{Admit: true}, nil
//	}
//
//	func main() { plugin.Serve(allowAll{}) }
//
// The binary is then listed in the admission service's plugin configuration
// with its SHA-256 checksum, a failure policy and a timeout (see
// services/admission/internal/pluginhost). Implement Describer as well to
// give the host a name and version for its logs.
//
// Tests can reach an implementation across the real gRPC boundary, without a
// child process, through TestClient.
package plugin
