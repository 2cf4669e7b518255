package server

import (
	"github.com/splitlet/splitlet/internal/procmain"
	"github.com/splitlet/splitlet/internal/tracing"
)

// Process is splitlet-gateway's name and its garbage collector's target,
// used unless the environment sets GOGC (procmain): its main runs with it,
// and so does the benchmark's gateway child process.
var Process = procmain.Process{
	Name: tracing.ServiceGateway,
	// A pod burst allocates fast over a small live heap, so at Go's
	// default of 100 the collector took 10-12% of the gateway's CPU in the
	// 1000-pod bench; at 200 the burst's CPU fell by about a sixth, for a
	// few MiB more RSS at 110 pods (BENCHMARKS.md).
	GCPercent: 200,
}
