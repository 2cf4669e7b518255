package gctune

import (
	"os"
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's target (SetGCPercent returns the old
// one) and puts it back.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestApply(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	for _, tc := range []struct {
		desc string
		gogc string // "" for unset
		want int
	}{
		{desc: "unset: the default", want: DefaultGCPercent},
		{desc: "GOGC wins", gogc: "150", want: 150},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			// The runtime read GOGC at start; set the target it would
			// have, so that Apply alone can move it.
			t.Setenv("GOGC", tc.gogc)
			if tc.gogc == "" {
				os.Unsetenv("GOGC")
				debug.SetGCPercent(100)
			} else {
				debug.SetGCPercent(tc.want)
			}
			Apply()
			if got := gcPercent(); got != tc.want {
				t.Errorf("GC percent %d, want %d", got, tc.want)
			}
		})
	}
}
