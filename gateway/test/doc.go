// Package test holds the gateway's integration tests that need no root and
// no container runtime: the shared CRI scenario (internal/scenario) through a
// real gateway server, over a unix socket and a gRPC client, in front of the
// fake backend. Its subdirectories hold what the real-runtime tests need:
// programs that build their images locally (pause, mkimage) and the e2e
// package that runs the scenario against containerd.
package test
