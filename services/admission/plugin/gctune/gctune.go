// Package gctune sets the garbage collector's target of splitlet-admission
// and of the admission plugins built on its SDK.
package gctune

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the GOGC of the admission process and its plugins
// when their environment sets none. Their live heaps are small (a node's
// pods, 1–3 MB), so at the runtime's default of 100 the heap goal sits near
// its 4 MB floor and the collector runs every ~150 admissions (~20 KB of
// garbage each in the service); an admission that meets a mark phase on a
// busy core waits it out, 1–2 ms, which made up the p99 of Admit
// (BENCHMARKS.md, sixteenth session). At 400 the collector runs a quarter
// as often, for heap goals of ~15 MB.
const DefaultGCPercent = 400

// Apply sets the collector's target to DefaultGCPercent unless GOGC is set,
// which wins as it does for any Go program.
func Apply() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
