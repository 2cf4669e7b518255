//go:build !unix

package server

import "time"

// processCPU is unknown here; the benchmarks then report 0.
func processCPU() time.Duration { return 0 }
