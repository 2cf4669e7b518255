// Package backend declares what the gateway needs from a container runtime.
//
// The gateway serves CRI to its clients and hands every call to one Runtime.
// Two implementations ship: backend/cri forwards to a real CRI endpoint such as
// containerd's socket, and backend/fake is an in-memory CRI runtime for tests,
// benchmarks and demos.
//
// Error contract: a Runtime returns either a gRPC status error (the proxy passes
// the real runtime's status through untouched) or an error wrapping one of the
// github.com/containerd/errdefs sentinels (errdefs.ErrNotFound,
// errdefs.ErrFailedPrecondition, ...). The gateway's server converts errors to
// gRPC status codes in exactly one place; a Runtime never does that itself.
package backend

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/gateway/backend/passthrough"
)

// Runtime is a CRI runtime and image service the gateway can front.
type Runtime interface {
	runtimeapi.RuntimeServiceServer
	runtimeapi.ImageServiceServer
	// Close releases the backend's connections and goroutines.
	Close() error
}

// Forwarder is a Runtime that can also forward a unary call as bytes: req is
// the request as the gateway's client encoded it, and reply is filled with the
// runtime's encoded answer. The gateway's server forwards this way the calls
// whose request it does not read (all but server/passthrough.go's
// decodedMethods), sparing a decode and an encode of each message. Errors
// follow the Runtime contract.
type Forwarder interface {
	Forward(ctx context.Context, fullMethod string, req, reply *passthrough.Frame) error
}
