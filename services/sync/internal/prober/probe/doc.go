// Package probe runs single probe attempts — exec (through an Execer),
// HTTP GET, TCP connect and the gRPC health protocol — with the kubelet's
// semantics and messages (the kubelet's pkg/probe tree). It holds no state:
// the prober package schedules attempts and applies thresholds, and the
// lifecycle package reuses the exec and HTTP request helpers for hooks.
//
// It imports nothing of sync's decision code, so both prober and
// lifecycle (which kuberuntime will import) can depend on it without a
// cycle.
package probe
