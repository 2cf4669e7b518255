package harness

import (
	"bytes"
	"regexp"
	"testing"
)

// The table shows the harness's own burst CPU beside the processes'.
func TestPrintResultShowsHarnessCPU(t *testing.T) {
	for _, tc := range []struct {
		desc string
		r    Result
		want bool
	}{
		{desc: "burst measured", want: true, r: Result{System: "splitlet", N: 5,
			BurstCPUSeconds: map[string]float64{"sync": 2.5}, HarnessBurstCPUSeconds: 1.23,
			Steady: map[string]Usage{"sync": {CPUCores: 0.1}}}},
		{desc: "no burst (the run failed before it)", r: Result{System: "splitlet", N: 5}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var b bytes.Buffer
			printResult(&b, tc.r)
			got := regexp.MustCompile(`(?m)^ +harness +burst CPU 1\.23 s`).Match(b.Bytes())
			if got != tc.want {
				t.Errorf("harness line present = %v, want %v; table:\n%s", got, tc.want, b.String())
			}
		})
	}
}
