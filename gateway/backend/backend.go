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
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is a CRI runtime and image service the gateway can front.
type Runtime interface {
	runtimeapi.RuntimeServiceServer
	runtimeapi.ImageServiceServer
	// Close releases the backend's connections and goroutines.
	Close() error
}
