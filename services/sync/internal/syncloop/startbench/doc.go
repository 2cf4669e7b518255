// Package startbench holds BenchmarkStartPods: a burst of pods started by
// the whole sync loop (syncloop, kuberuntime) against the gateway's fake
// runtime in process, counting the CRI calls and CPU per started pod. It
// lives apart from syncloop so that syncloop's unit tests do not build the
// gateway.
package startbench
