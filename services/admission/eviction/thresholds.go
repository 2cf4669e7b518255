package eviction

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/splitlet/splitlet/services/admission/nodeinfo"
)

// Flag names, used in parse errors so an operator knows which setting is
// wrong.
const (
	FlagEvictionHard            = "--eviction-hard"
	FlagEvictionSoft            = "--eviction-soft"
	FlagEvictionSoftGracePeriod = "--eviction-soft-grace-period"
	FlagEvictionMinimumReclaim  = "--eviction-minimum-reclaim"
)

// DefaultPressureTransitionPeriod is the kubelet's default
// --eviction-pressure-transition-period.
const DefaultPressureTransitionPeriod = 5 * time.Minute

// ThresholdValue is a literal quantity or a fraction of capacity, as the
// kubelet's evictionapi.ThresholdValue: Quantity wins when set.
type ThresholdValue struct {
	Quantity *resource.Quantity
	// Percentage is a fraction in (0, 1]: 10% is 0.1.
	Percentage float32
}

func (v ThresholdValue) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	// Six significant digits hide float32 noise: 15% is stored as
	// 0.150000006.
	return strconv.FormatFloat(float64(v.Percentage)*100, 'g', 6, 64) + "%"
}

// Threshold is one eviction threshold, as the kubelet's evictionapi.Threshold.
// The only operator is "less than": a threshold is met when the signal's
// available value drops below it.
type Threshold struct {
	Signal Signal
	Value  ThresholdValue
	// GracePeriod is how long a soft threshold must stay met before pods
	// are evicted; zero makes the threshold hard.
	GracePeriod time.Duration
	// MinReclaim, when set, keeps a met threshold in force until the signal
	// recovers to Value plus MinReclaim.
	MinReclaim *ThresholdValue
}

func (t Threshold) String() string {
	return fmt.Sprintf("threshold(signal=%v, value=%v, gracePeriod=%v)", t.Signal, t.Value, t.GracePeriod)
}

// isHardEvictionThreshold is the kubelet's function of the same name.
func isHardEvictionThreshold(t Threshold) bool {
	return t.GracePeriod == 0
}

// thresholdQuantity resolves a value against a capacity, as the kubelet's
// evictionapi.GetThresholdQuantity.
func thresholdQuantity(v ThresholdValue, capacity resource.Quantity) resource.Quantity {
	if v.Quantity != nil {
		return v.Quantity.DeepCopy()
	}
	return *resource.NewQuantity(int64(float64(capacity.Value())*float64(v.Percentage)), resource.BinarySI)
}

// ThresholdConfig holds the four eviction settings as maps from signal to
// value, the form the kubelet's configuration file uses (evictionHard,
// evictionSoft, evictionSoftGracePeriod, evictionMinimumReclaim).
type ThresholdConfig struct {
	// Hard maps a signal to "100Mi" or "10%".
	Hard map[string]string
	// Soft maps a signal to a threshold that must also have a grace period.
	Soft map[string]string
	// SoftGracePeriod maps a signal to a duration such as "1m30s".
	SoftGracePeriod map[string]string
	// MinimumReclaim maps a signal to "500Mi" or "5%".
	MinimumReclaim map[string]string
}

// DefaultThresholdConfig returns the kubelet's Linux defaults:
// memory.available<100Mi, nodefs.available<10%, nodefs.inodesFree<5%,
// imagefs.available<15%, imagefs.inodesFree<5%.
func DefaultThresholdConfig() ThresholdConfig {
	return ThresholdConfig{Hard: maps.Clone(nodeinfo.DefaultEvictionHard)}
}

// ParseThresholdFlags parses the command-line forms of the four settings:
// hard and soft as "memory.available<100Mi,nodefs.available<10%", grace
// periods and minimum reclaims as "memory.available=1m30s". Empty strings
// mean "not set". Errors wrap errdefs.ErrInvalidArgument and name the flag.
func ParseThresholdFlags(hard, soft, softGracePeriod, minimumReclaim string) ([]Threshold, error) {
	var cfg ThresholdConfig
	var err error
	if cfg.Hard, err = parseFlagMap(FlagEvictionHard, hard, "<"); err != nil {
		return nil, err
	}
	if cfg.Soft, err = parseFlagMap(FlagEvictionSoft, soft, "<"); err != nil {
		return nil, err
	}
	if cfg.SoftGracePeriod, err = parseFlagMap(FlagEvictionSoftGracePeriod, softGracePeriod, "="); err != nil {
		return nil, err
	}
	if cfg.MinimumReclaim, err = parseFlagMap(FlagEvictionMinimumReclaim, minimumReclaim, "="); err != nil {
		return nil, err
	}
	return ParseThresholdConfig(cfg)
}

// parseFlagMap splits "k<v,k2<v2" (or "=") as the kubelet's
// cliflag.LangleSeparatedMapStringString and MapStringString do.
func parseFlagMap(flag, value, sep string) (map[string]string, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for pair := range strings.SplitSeq(value, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, sep)
		if !ok {
			return nil, fmt.Errorf("%s: malformed pair %q, expect string%sstring: %w", flag, pair, sep, errdefs.ErrInvalidArgument)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

// ParseThresholdConfig turns the settings into thresholds, as the kubelet's
// ParseThresholdConfig: hard thresholds first, then soft ones (each needs a
// grace period), with minimum reclaims attached to every threshold of their
// signal. 0% and 100% thresholds are ignored, as the kubelet ignores them.
// Within each group thresholds are sorted by signal so the result does not
// depend on map order. Errors wrap errdefs.ErrInvalidArgument and name the
// flag.
func ParseThresholdConfig(cfg ThresholdConfig) ([]Threshold, error) {
	hard, err := parseThresholdStatements(FlagEvictionHard, cfg.Hard)
	if err != nil {
		return nil, err
	}
	soft, err := parseThresholdStatements(FlagEvictionSoft, cfg.Soft)
	if err != nil {
		return nil, err
	}
	grace, err := parseGracePeriods(cfg.SoftGracePeriod)
	if err != nil {
		return nil, err
	}
	minReclaims, err := parseMinimumReclaims(cfg.MinimumReclaim)
	if err != nil {
		return nil, err
	}
	for i := range soft {
		period, ok := grace[soft[i].Signal]
		if !ok {
			return nil, fmt.Errorf("%s: grace period must be specified for the soft eviction threshold %v: %w",
				FlagEvictionSoftGracePeriod, soft[i].Signal, errdefs.ErrInvalidArgument)
		}
		soft[i].GracePeriod = period
	}
	results := append(hard, soft...)
	for i := range results {
		if mr, ok := minReclaims[results[i].Signal]; ok {
			results[i].MinReclaim = &mr
		}
	}
	return results, nil
}

// parseThresholdStatements is the kubelet's parseThresholdStatements, in
// signal order.
func parseThresholdStatements(flag string, statements map[string]string) ([]Threshold, error) {
	var results []Threshold
	for _, signal := range slices.Sorted(maps.Keys(statements)) {
		t, err := parseThresholdStatement(Signal(signal), statements[signal])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		if t != nil {
			results = append(results, *t)
		}
	}
	return results, nil
}

// parseThresholdStatement is the kubelet's parseThresholdStatement: nil for
// the ignored 0% and 100%.
func parseThresholdStatement(signal Signal, val string) (*Threshold, error) {
	if !validSignal(signal) {
		return nil, fmt.Errorf("unsupported eviction signal %v: %w", signal, errdefs.ErrInvalidArgument)
	}
	if strings.HasSuffix(val, "%") {
		if val == "0%" || val == "100%" {
			return nil, nil
		}
		p, err := parsePercentage(val)
		if err != nil {
			return nil, fmt.Errorf("eviction threshold %v: %w", signal, err)
		}
		if p < 0 {
			return nil, fmt.Errorf("eviction percentage threshold %v must be >= 0%%: %s: %w", signal, val, errdefs.ErrInvalidArgument)
		}
		if p > 1 {
			return nil, fmt.Errorf("eviction percentage threshold %v must be <= 100%%: %s: %w", signal, val, errdefs.ErrInvalidArgument)
		}
		return &Threshold{Signal: signal, Value: ThresholdValue{Percentage: p}}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return nil, fmt.Errorf("eviction threshold %v: %q: %v: %w", signal, val, err, errdefs.ErrInvalidArgument)
	}
	if q.Sign() <= 0 {
		return nil, fmt.Errorf("eviction threshold %v must be positive: %s: %w", signal, &q, errdefs.ErrInvalidArgument)
	}
	return &Threshold{Signal: signal, Value: ThresholdValue{Quantity: &q}}, nil
}

// parsePercentage is the kubelet's parsePercentage: "10%" is 0.1.
func parsePercentage(input string) (float32, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(input, "%"), 32)
	if err != nil {
		return 0, fmt.Errorf("invalid percentage %q: %w", input, errdefs.ErrInvalidArgument)
	}
	return float32(v) / 100, nil
}

// parseGracePeriods is the kubelet's parseGracePeriods.
func parseGracePeriods(statements map[string]string) (map[Signal]time.Duration, error) {
	results := map[Signal]time.Duration{}
	for signal, val := range statements {
		s := Signal(signal)
		if !validSignal(s) {
			return nil, fmt.Errorf("%s: unsupported eviction signal %v: %w", FlagEvictionSoftGracePeriod, s, errdefs.ErrInvalidArgument)
		}
		d, err := time.ParseDuration(val)
		if err != nil {
			return nil, fmt.Errorf("%s: %v: %v: %w", FlagEvictionSoftGracePeriod, s, err, errdefs.ErrInvalidArgument)
		}
		if d < 0 {
			return nil, fmt.Errorf("%s: invalid eviction grace period specified: %v, must be a positive value: %w",
				FlagEvictionSoftGracePeriod, val, errdefs.ErrInvalidArgument)
		}
		results[s] = d
	}
	return results, nil
}

// parseMinimumReclaims is the kubelet's parseMinimumReclaims.
func parseMinimumReclaims(statements map[string]string) (map[Signal]ThresholdValue, error) {
	const flag = FlagEvictionMinimumReclaim
	results := map[Signal]ThresholdValue{}
	for signal, val := range statements {
		s := Signal(signal)
		if !validSignal(s) {
			return nil, fmt.Errorf("%s: unsupported eviction signal %v: %w", flag, s, errdefs.ErrInvalidArgument)
		}
		if strings.HasSuffix(val, "%") {
			p, err := parsePercentage(val)
			if err != nil {
				return nil, fmt.Errorf("%s: %v: %w", flag, s, err)
			}
			if p <= 0 {
				return nil, fmt.Errorf("%s: eviction percentage minimum reclaim %v must be positive: %s: %w", flag, s, val, errdefs.ErrInvalidArgument)
			}
			results[s] = ThresholdValue{Percentage: p}
			continue
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			return nil, fmt.Errorf("%s: %v: %q: %v: %w", flag, s, val, err, errdefs.ErrInvalidArgument)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s: negative eviction minimum reclaim specified for %v: %w", flag, s, errdefs.ErrInvalidArgument)
		}
		results[s] = ThresholdValue{Quantity: &q}
	}
	return results, nil
}

// thresholdsMet returns the thresholds whose signal is below them, ignoring
// grace periods (the kubelet's thresholdsMet). With enforceMinReclaim, a
// threshold stays met until the signal is above value plus min-reclaim.
func thresholdsMet(thresholds []Threshold, obs map[Signal]SignalObservation, enforceMinReclaim bool) []Threshold {
	var results []Threshold
	for _, t := range thresholds {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		q := thresholdQuantity(t.Value, o.Capacity)
		if enforceMinReclaim && t.MinReclaim != nil {
			q.Add(thresholdQuantity(*t.MinReclaim, o.Capacity))
		}
		if q.Cmp(o.Available) > 0 {
			results = append(results, t)
		}
	}
	return results
}

// thresholdsUpdatedStats keeps the thresholds whose observation is newer
// than the previous cycle's (the kubelet's thresholdsUpdatedStats).
func thresholdsUpdatedStats(thresholds []Threshold, obs, last map[Signal]SignalObservation) []Threshold {
	var results []Threshold
	for _, t := range thresholds {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		l, ok := last[t.Signal]
		if !ok || o.Time.IsZero() || o.Time.After(l.Time) {
			results = append(results, t)
		}
	}
	return results
}

// thresholdsObservedAt records when each threshold was first met. Thresholds
// are compared as the kubelet compares them, by value with pointer identity
// for quantities, which holds because they all come from the one parsed
// configuration.
type thresholdsObservedAt map[Threshold]time.Time

// thresholdsFirstObservedAt is the kubelet's function of the same name: a
// threshold keeps its first time while it stays met and forgets it as soon
// as it is not.
func thresholdsFirstObservedAt(thresholds []Threshold, last thresholdsObservedAt, now time.Time) thresholdsObservedAt {
	results := thresholdsObservedAt{}
	for _, t := range thresholds {
		at, ok := last[t]
		if !ok {
			at = now
		}
		results[t] = at
	}
	return results
}

// thresholdsMetGracePeriod returns the thresholds met for at least their
// grace period (the kubelet's thresholdsMetGracePeriod), in configuration
// order so that the choice among equals does not depend on map order.
func thresholdsMetGracePeriod(order []Threshold, observedAt thresholdsObservedAt, now time.Time) []Threshold {
	var results []Threshold
	for _, t := range order {
		at, ok := observedAt[t]
		if !ok || now.Sub(at) < t.GracePeriod {
			continue
		}
		results = append(results, t)
	}
	return results
}

// mergeThresholds appends to a the thresholds of b it lacks (the kubelet's
// mergeThresholds).
func mergeThresholds(a, b []Threshold) []Threshold {
	results := slices.Clone(a)
	for _, t := range b {
		if !slices.ContainsFunc(results, func(r Threshold) bool { return sameThreshold(r, t) }) {
			results = append(results, t)
		}
	}
	return results
}

// sameThreshold is the kubelet's hasThreshold comparison.
func sameThreshold(a, b Threshold) bool {
	return a.GracePeriod == b.GracePeriod && a.Signal == b.Signal && sameThresholdValue(a.Value, b.Value)
}

// sameThresholdValue is the kubelet's compareThresholdValue.
func sameThresholdValue(a, b ThresholdValue) bool {
	if a.Quantity != nil || b.Quantity != nil {
		return a.Quantity != nil && b.Quantity != nil && a.Quantity.Cmp(*b.Quantity) == 0
	}
	return a.Percentage == b.Percentage
}

// sortByEvictionPriority orders thresholds as the kubelet's
// byEvictionPriority: memory first, then the rest in their order.
func sortByEvictionPriority(thresholds []Threshold) {
	slices.SortStableFunc(thresholds, func(a, b Threshold) int {
		am, bm := a.Signal == SignalMemoryAvailable, b.Signal == SignalMemoryAvailable
		switch {
		case am && !bm:
			return -1
		case bm && !am:
			return 1
		}
		return 0
	})
}
