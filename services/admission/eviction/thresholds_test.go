package eviction

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"k8s.io/apimachinery/pkg/api/resource"
)

// thresholdString renders a threshold compactly for comparisons.
func thresholdString(t Threshold) string {
	s := string(t.Signal) + "<" + t.Value.String()
	if t.GracePeriod != 0 {
		s += " grace=" + t.GracePeriod.String()
	}
	if t.MinReclaim != nil {
		s += " minReclaim=" + t.MinReclaim.String()
	}
	return s
}

func thresholdStrings(ts []Threshold) []string {
	var out []string
	for _, t := range ts {
		out = append(out, thresholdString(t))
	}
	return out
}

func TestParseThresholdConfig(t *testing.T) {
	tests := []struct {
		desc    string
		cfg     ThresholdConfig
		want    []string
		wantErr string // substring; the flag name must appear in it
	}{
		{desc: "empty config has no thresholds"},
		{
			desc: "kubelet defaults",
			cfg:  DefaultThresholdConfig(),
			want: []string{"imagefs.available<15%", "imagefs.inodesFree<5%", "memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%"},
		},
		{
			desc: "0% and 100% are ignored",
			cfg:  ThresholdConfig{Hard: map[string]string{"nodefs.available": "0%", "imagefs.available": "100%", "pid.available": "1000"}},
			want: []string{"pid.available<1k"},
		},
		{
			desc: "fractional percentage",
			cfg:  ThresholdConfig{Hard: map[string]string{"nodefs.available": "7.5%"}},
			want: []string{"nodefs.available<7.5%"},
		},
		{
			desc: "soft threshold takes its grace period, hard ones come first",
			cfg: ThresholdConfig{
				Hard:            map[string]string{"memory.available": "100Mi"},
				Soft:            map[string]string{"memory.available": "300Mi"},
				SoftGracePeriod: map[string]string{"memory.available": "1m30s"},
			},
			want: []string{"memory.available<100Mi", "memory.available<300Mi grace=1m30s"},
		},
		{
			desc: "minimum reclaim applies to hard and soft thresholds of the signal",
			cfg: ThresholdConfig{
				Hard:            map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"},
				Soft:            map[string]string{"memory.available": "300Mi"},
				SoftGracePeriod: map[string]string{"memory.available": "30s", "pid.available": "1m"},
				MinimumReclaim:  map[string]string{"memory.available": "50Mi", "nodefs.available": "5%"},
			},
			want: []string{
				"memory.available<100Mi minReclaim=50Mi",
				"nodefs.available<10% minReclaim=5%",
				"memory.available<300Mi grace=30s minReclaim=50Mi",
			},
		},
		{
			desc:    "unsupported signal",
			cfg:     ThresholdConfig{Hard: map[string]string{"memory.availble": "100Mi"}},
			wantErr: "--eviction-hard: unsupported eviction signal memory.availble",
		},
		{
			desc:    "signal splitlet does not observe",
			cfg:     ThresholdConfig{Soft: map[string]string{"allocatableMemory.available": "100Mi"}},
			wantErr: "--eviction-soft: unsupported eviction signal allocatableMemory.available",
		},
		{
			desc:    "zero quantity",
			cfg:     ThresholdConfig{Hard: map[string]string{"memory.available": "0"}},
			wantErr: "--eviction-hard: eviction threshold memory.available must be positive",
		},
		{
			desc:    "negative quantity",
			cfg:     ThresholdConfig{Hard: map[string]string{"memory.available": "-1Mi"}},
			wantErr: "--eviction-hard: eviction threshold memory.available must be positive",
		},
		{
			desc:    "unparsable quantity",
			cfg:     ThresholdConfig{Hard: map[string]string{"memory.available": "lots"}},
			wantErr: "--eviction-hard: eviction threshold memory.available",
		},
		{
			desc:    "percentage above 100",
			cfg:     ThresholdConfig{Hard: map[string]string{"nodefs.available": "150%"}},
			wantErr: "--eviction-hard: eviction percentage threshold nodefs.available must be <= 100%",
		},
		{
			desc:    "negative percentage",
			cfg:     ThresholdConfig{Soft: map[string]string{"nodefs.available": "-5%"}},
			wantErr: "--eviction-soft: eviction percentage threshold nodefs.available must be >= 0%",
		},
		{
			desc:    "unparsable percentage",
			cfg:     ThresholdConfig{Hard: map[string]string{"nodefs.available": "ten%"}},
			wantErr: "--eviction-hard: eviction threshold nodefs.available: invalid percentage",
		},
		{
			desc:    "soft threshold without grace period",
			cfg:     ThresholdConfig{Soft: map[string]string{"memory.available": "300Mi"}},
			wantErr: "--eviction-soft-grace-period: grace period must be specified for the soft eviction threshold memory.available",
		},
		{
			desc: "unparsable grace period",
			cfg: ThresholdConfig{
				Soft:            map[string]string{"memory.available": "300Mi"},
				SoftGracePeriod: map[string]string{"memory.available": "90"},
			},
			wantErr: "--eviction-soft-grace-period: memory.available",
		},
		{
			desc:    "negative grace period",
			cfg:     ThresholdConfig{SoftGracePeriod: map[string]string{"memory.available": "-1m"}},
			wantErr: "--eviction-soft-grace-period: invalid eviction grace period specified: -1m",
		},
		{
			desc:    "grace period for an unsupported signal",
			cfg:     ThresholdConfig{SoftGracePeriod: map[string]string{"swap.available": "1m"}},
			wantErr: "--eviction-soft-grace-period: unsupported eviction signal swap.available",
		},
		{
			desc:    "negative minimum reclaim",
			cfg:     ThresholdConfig{MinimumReclaim: map[string]string{"memory.available": "-1Mi"}},
			wantErr: "--eviction-minimum-reclaim: negative eviction minimum reclaim specified for memory.available",
		},
		{
			desc:    "zero percent minimum reclaim",
			cfg:     ThresholdConfig{MinimumReclaim: map[string]string{"nodefs.available": "0%"}},
			wantErr: "--eviction-minimum-reclaim: eviction percentage minimum reclaim nodefs.available must be positive",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ParseThresholdConfig(tc.cfg)
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseThresholdConfig() = %v, want error containing %q", thresholdStrings(got), tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %q does not contain %q", err, tc.wantErr)
				}
				if !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Errorf("error %v does not wrap errdefs.ErrInvalidArgument", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseThresholdConfig() error: %v", err)
			}
			if g, w := strings.Join(thresholdStrings(got), "; "), strings.Join(tc.want, "; "); g != w {
				t.Errorf("thresholds = %s\nwant          %s", g, w)
			}
		})
	}
}

func TestParseThresholdFlags(t *testing.T) {
	tests := []struct {
		desc                          string
		hard, soft, grace, minReclaim string
		want                          []string
		wantErr                       string
	}{
		{
			desc: "command-line forms",
			hard: "memory.available<100Mi, nodefs.available<10%", soft: "memory.available<1Gi",
			grace: "memory.available=1m30s", minReclaim: "memory.available=0",
			want: []string{"memory.available<100Mi minReclaim=0", "nodefs.available<10%", "memory.available<1Gi grace=1m30s minReclaim=0"},
		},
		{desc: "all empty"},
		{desc: "hard with '=' is malformed", hard: "memory.available=100Mi", wantErr: "--eviction-hard: malformed pair"},
		{desc: "grace with '<' is malformed", grace: "memory.available<1m", wantErr: "--eviction-soft-grace-period: malformed pair"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got, err := ParseThresholdFlags(tc.hard, tc.soft, tc.grace, tc.minReclaim)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, errdefs.ErrInvalidArgument) {
					t.Fatalf("error = %v, want an invalid-argument error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseThresholdFlags() error: %v", err)
			}
			if g, w := strings.Join(thresholdStrings(got), "; "), strings.Join(tc.want, "; "); g != w {
				t.Errorf("thresholds = %s\nwant          %s", g, w)
			}
		})
	}
}

func TestThresholdsMet(t *testing.T) {
	q := resource.MustParse("100Mi")
	mr := resource.MustParse("50Mi")
	byQuantity := Threshold{Signal: SignalMemoryAvailable, Value: ThresholdValue{Quantity: &q}, MinReclaim: &ThresholdValue{Quantity: &mr}}
	byPercent := Threshold{Signal: SignalNodeFsAvailable, Value: ThresholdValue{Percentage: 0.1}}
	obs := func(sig Signal, avail, capacity string) map[Signal]SignalObservation {
		return map[Signal]SignalObservation{sig: {Available: resource.MustParse(avail), Capacity: resource.MustParse(capacity)}}
	}
	tests := []struct {
		desc       string
		threshold  Threshold
		obs        map[Signal]SignalObservation
		minReclaim bool
		wantMet    bool
	}{
		{desc: "below quantity", threshold: byQuantity, obs: obs(SignalMemoryAvailable, "99Mi", "1Gi"), wantMet: true},
		{desc: "exactly at quantity is not met", threshold: byQuantity, obs: obs(SignalMemoryAvailable, "100Mi", "1Gi")},
		{desc: "above quantity", threshold: byQuantity, obs: obs(SignalMemoryAvailable, "120Mi", "1Gi")},
		{desc: "above quantity but within min-reclaim", threshold: byQuantity, obs: obs(SignalMemoryAvailable, "120Mi", "1Gi"), minReclaim: true, wantMet: true},
		{desc: "above quantity plus min-reclaim", threshold: byQuantity, obs: obs(SignalMemoryAvailable, "151Mi", "1Gi"), minReclaim: true},
		{desc: "below percentage of capacity", threshold: byPercent, obs: obs(SignalNodeFsAvailable, "9Gi", "100Gi"), wantMet: true},
		{desc: "above percentage of capacity", threshold: byPercent, obs: obs(SignalNodeFsAvailable, "11Gi", "100Gi")},
		{desc: "no observation of the signal", threshold: byPercent, obs: obs(SignalMemoryAvailable, "1", "100Gi")},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got := thresholdsMet([]Threshold{tc.threshold}, tc.obs, tc.minReclaim)
			if (len(got) == 1) != tc.wantMet {
				t.Errorf("thresholdsMet() = %v, want met=%v", thresholdStrings(got), tc.wantMet)
			}
		})
	}
}

func TestThresholdsMetGracePeriod(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q := resource.MustParse("1Gi")
	hard := Threshold{Signal: SignalMemoryAvailable, Value: ThresholdValue{Quantity: &q}}
	soft := Threshold{Signal: SignalMemoryAvailable, Value: ThresholdValue{Quantity: &q}, GracePeriod: time.Minute}
	tests := []struct {
		desc  string
		since time.Duration
		want  int
	}{
		{desc: "just observed: hard only", since: 0, want: 1},
		{desc: "before grace: hard only", since: 59 * time.Second, want: 1},
		{desc: "at grace: both", since: time.Minute, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			at := thresholdsObservedAt{hard: now.Add(-tc.since), soft: now.Add(-tc.since)}
			if got := thresholdsMetGracePeriod([]Threshold{hard, soft}, at, now); len(got) != tc.want {
				t.Errorf("thresholdsMetGracePeriod() = %v, want %d thresholds", thresholdStrings(got), tc.want)
			}
		})
	}
}
