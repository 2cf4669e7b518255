package harness

import (
	"bufio"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RPCStat is how often one CRI method was called during a run and how long
// the calls took, in milliseconds.
type RPCStat struct {
	Count  int     `json:"count"`
	MeanMS float64 `json:"mean_ms"`
	// P50MS and MaxMS are known only where each call was timed (the
	// direct side); the gateway's histogram gives a mean.
	P50MS float64 `json:"p50_ms,omitempty"`
	MaxMS float64 `json:"max_ms,omitempty"`
}

// rpcTimer collects the duration of every call by method, safely from
// many goroutines.
type rpcTimer struct {
	mu sync.Mutex
	ds map[string][]time.Duration
}

func newRPCTimer() *rpcTimer { return &rpcTimer{ds: make(map[string][]time.Duration)} }

// time runs call and records its duration under method.
func (t *rpcTimer) time(method string, call func() error) error {
	start := time.Now()
	err := call()
	d := time.Since(start)
	t.mu.Lock()
	t.ds[method] = append(t.ds[method], d)
	t.mu.Unlock()
	return err
}

func (t *rpcTimer) stats() map[string]RPCStat {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]RPCStat, len(t.ds))
	for m, ds := range t.ds {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		s := summarize(ds, 0)
		out[m] = RPCStat{Count: len(ds), MeanMS: ms(sum / time.Duration(len(ds))), P50MS: s.P50, MaxMS: s.Max}
	}
	return out
}

// gatewayOps is the gateway's per-method call count and summed duration,
// read from its Prometheus text exposition
// (splitlet_gateway_runtime_operations_duration_seconds_{sum,count}).
type gatewayOps map[string]struct {
	Count float64
	Sum   float64
}

const gatewayDurationMetric = "splitlet_gateway_runtime_operations_duration_seconds"

// parseGatewayOps picks the duration histogram's _sum and _count series out
// of a /metrics body; other series are ignored.
func parseGatewayOps(body string) gatewayOps {
	out := gatewayOps{}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, gatewayDurationMetric+"_")
		if !ok {
			continue
		}
		kind, rest, ok := strings.Cut(rest, "{")
		if !ok || (kind != "sum" && kind != "count") {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		op := labelValue(labels, "operation_type")
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if op == "" || err != nil {
			continue
		}
		e := out[op]
		if kind == "sum" {
			e.Sum = v
		} else {
			e.Count = v
		}
		out[op] = e
	}
	return out
}

// labelValue returns the value of key in a Prometheus label set such as
// `a="x",operation_type="RunPodSandbox"`.
func labelValue(labels, key string) string {
	for kv := range strings.SplitSeq(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.TrimSpace(k) == key {
			if s, err := strconv.Unquote(v); err == nil {
				return s
			}
		}
	}
	return ""
}

// diffOps returns the calls made between two scrapes, per method, as
// counts and mean durations; methods not called are left out.
func diffOps(before, after gatewayOps) map[string]RPCStat {
	out := map[string]RPCStat{}
	for op, a := range after {
		b := before[op]
		n := a.Count - b.Count
		if n <= 0 {
			continue
		}
		out[op] = RPCStat{Count: int(math.Round(n)), MeanMS: math.Round((a.Sum-b.Sum)/n*1e6) / 1000}
	}
	return out
}

// median returns the median of vs (the mean of the middle two for an even
// count), 0 for none.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// ratio is a / b, 0 when b is 0 (nothing measured), rounded to 3 places.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*1000) / 1000
}
