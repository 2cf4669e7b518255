//go:build unix

package server

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used. The
// benchmarks report it per call beside the latencies: on a shared, loaded
// machine the latencies mostly measure the wait for a core, the CPU time
// much less so. It covers the client, the server and the host's side of the
// plugin hop, not the plugin process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
