// Package gctune raises the garbage collector's minimum heap goal in
// splitlet-admission and in the admission plugins built on its SDK.
package gctune

import (
	"os"
)

// BallastBytes is the size of the heap ballast Apply allocates: a byte
// slice that is never written, so it takes address space but no memory
// (its pages are never touched), and the collector, counting it as live
// heap, sets its goal as if the process held that much more.
//
// The processes' live heaps are small (a node's pods: 1–3 MB with 110), so
// the heap goal sat at the runtime's 4 MB floor and the collector ran
// every ~150 admissions; an admission that meets a mark phase on a busy
// core waits it out, 1–2 ms, which made up the p99 of Admit
// (BENCHMARKS.md, sixteenth session). With the ballast the goal is
// 2 × (16 MB + live): a collection every ~1000 admissions at 110 pods,
// while the headroom still grows with the live heap as at GOGC 100. A
// higher GOGC instead (400 was tried) made the collector as rare but
// multiplied the heap of a node with 1000 pods, and admitting a burst on
// it took a third more CPU.
const BallastBytes = 16 << 20

// ballast is kept for the life of the process.
var ballast []byte

// Apply allocates the ballast unless GOGC is set: whoever sets it chose
// the collector's pace, and gets exactly that. Call it early, before the
// process has freed much: memory a collection freed may be handed to the
// ballast, and reused memory is zeroed, which makes its pages resident.
func Apply() {
	if _, ok := os.LookupEnv("GOGC"); ok {
		return
	}
	ballast = make([]byte, BallastBytes)
}
