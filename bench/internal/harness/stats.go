package harness

import (
	"math"
	"slices"
	"time"
)

// Summary is the distribution of per-pod durations, in milliseconds.
type Summary struct {
	// Count is how many pods reached the state; Missing how many did not
	// before the deadline (their durations are not in the percentiles).
	Count   int     `json:"count"`
	Missing int     `json:"missing"`
	P50     float64 `json:"p50_ms"`
	P90     float64 `json:"p90_ms"`
	P99     float64 `json:"p99_ms"`
	Max     float64 `json:"max_ms"`
}

// summarize computes the nearest-rank percentiles of ds; missing is carried
// through so a table shows pods that never got there.
func summarize(ds []time.Duration, missing int) Summary {
	s := Summary{Count: len(ds), Missing: missing}
	if len(ds) == 0 {
		return s
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	s.P50 = ms(percentile(sorted, 50))
	s.P90 = ms(percentile(sorted, 90))
	s.P99 = ms(percentile(sorted, 99))
	s.Max = ms(sorted[len(sorted)-1])
	return s
}

// percentile returns the nearest-rank p-th percentile of sorted (ascending,
// non-empty): the smallest value with at least p% of values at or below it.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }
