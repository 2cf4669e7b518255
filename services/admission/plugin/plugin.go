package plugin

import (
	"context"

	goplugin "github.com/hashicorp/go-plugin"
	v1 "k8s.io/api/core/v1"
)

// PluginName is the key under which the admission plugin is served and
// dispensed in a go-plugin plugin set.
const PluginName = "admission"

// Handshake is shared by the host and every plugin. go-plugin refuses to
// connect when either side differs, so a binary that is not an admission
// plugin (or speaks another protocol version) fails at start with a clear
// error instead of misbehaving. Bump ProtocolVersion on an incompatible
// change of AdmissionPluginService.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "SPLITLET_ADMISSION_PLUGIN",
	MagicCookieValue: "8f0c6d2e-splitlet-admission",
}

// PluginMap is the plugin set the host dispenses from. Serving uses its own
// set carrying the implementation.
var PluginMap = map[string]goplugin.Plugin{
	PluginName: &GRPCPlugin{},
}

// Request is what a plugin decides on. It must not be mutated: the SDK
// shares decoded active pods between calls (see cache.go), and the host
// shares its objects with other handlers.
type Request struct {
	// Pod is the pod being admitted.
	Pod *v1.Pod
	// ActivePods are the pods already admitted and active on the node, not
	// including Pod, in no particular order. However they travelled (whole,
	// or as changes to the set of the previous call: see GRPCClient), this
	// is the whole set.
	ActivePods []*v1.Pod
	// Node is the node object, or nil when the host has none.
	Node *v1.Node
}

// Response is a plugin's decision.
type Response struct {
	// Admit is true when the pod may run on the node.
	Admit bool
	// Reason is a brief CamelCase reason for a rejection (e.g.
	// ImageNotAllowed); it becomes the pod's status reason.
	Reason string
	// Message is a human-readable explanation of a rejection.
	Message string
}

// AdmissionPlugin decides whether a pod may run on the node.
//
// Admit returns a Response for every decision, including rejections. It
// returns an error only when it cannot decide (a dependency is down, the
// request is malformed); the host then applies the plugin's failure policy:
// fail-closed rejects the pod, fail-open admits it. Admit must honour ctx,
// whose deadline is the plugin's configured timeout, and may be called
// concurrently.
type AdmissionPlugin interface {
	Admit(ctx context.Context, req *Request) (*Response, error)
}

// Info names a plugin.
type Info struct {
	Name    string
	Version string
}

// Describer is an optional capability of an AdmissionPlugin: a plugin that
// implements it names itself in the host's logs. Plugins that do not answer
// with an empty Info.
type Describer interface {
	Describe(ctx context.Context) (Info, error)
}
