package harness

import (
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	oneToHundred := make([]time.Duration, 100)
	for i := range oneToHundred {
		// Reversed, so summarize must sort.
		oneToHundred[i] = time.Duration(100-i) * time.Millisecond
	}
	for _, tc := range []struct {
		desc    string
		in      []time.Duration
		missing int
		want    Summary
	}{
		{desc: "1..100 ms", in: oneToHundred, want: Summary{Count: 100, P50: 50, P90: 90, P99: 99, Max: 100}},
		{desc: "one value is every percentile", in: []time.Duration{1500 * time.Microsecond},
			want: Summary{Count: 1, P50: 1.5, P90: 1.5, P99: 1.5, Max: 1.5}},
		{desc: "nearest rank rounds up", in: []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond},
			want: Summary{Count: 3, P50: 2, P90: 3, P99: 3, Max: 3}},
		{desc: "missing carried, none measured", missing: 4, want: Summary{Missing: 4}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := summarize(tc.in, tc.missing); got != tc.want {
				t.Errorf("summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}
