package eviction

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/containerd/errdefs"
)

func TestSignalToNodeReclaim(t *testing.T) {
	both := NodeReclaim{Containers: true, Images: true}
	tests := []struct {
		desc      string
		dedicated bool
		want      map[Signal]NodeReclaim
	}{
		{
			desc: "one filesystem: every disk signal collects containers then images",
			want: map[Signal]NodeReclaim{
				SignalNodeFsAvailable: both, SignalNodeFsInodesFree: both,
				SignalImageFsAvailable: both, SignalImageFsInodesFree: both,
			},
		},
		{
			desc:      "dedicated imagefs: nodefs reclaims nothing, imagefs collects containers then images",
			dedicated: true,
			want: map[Signal]NodeReclaim{
				SignalNodeFsAvailable: {}, SignalNodeFsInodesFree: {},
				SignalImageFsAvailable: both, SignalImageFsInodesFree: both,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got := signalToNodeReclaim(tc.dedicated)
			if !maps.Equal(got, tc.want) {
				t.Errorf("signalToNodeReclaim(%v) = %v, want %v", tc.dedicated, got, tc.want)
			}
			for _, s := range []Signal{SignalMemoryAvailable, SignalPIDAvailable} {
				if got[s].any() {
					t.Errorf("%s asks for node-level reclaim", s)
				}
			}
		})
	}
}

// reclaimer stands for sync: it answers each reclaim request with answer,
// after setting the source's observations to after (what the garbage
// collection freed).
type reclaimer struct {
	requests chan ReclaimRequest
	reports  chan error
}

func startReclaimer(ctx context.Context, m *Manager, src *ScriptedSource, after *Observations, answer ReclaimReport) *reclaimer {
	r := &reclaimer{requests: make(chan ReclaimRequest, 8), reports: make(chan error, 8)}
	sub := m.SubscribeReclaims(ctx)
	go func() {
		for req := range sub {
			r.requests <- req
			if after != nil {
				src.Set(*after)
			}
			r.reports <- m.ReportReclaim(ctx, req.ID, answer)
		}
	}()
	return r
}

func TestNodeLevelReclaimBeforeEviction(t *testing.T) {
	hard := ThresholdConfig{Hard: map[string]string{"imagefs.available": "10Gi", "memory.available": "100Mi"}}
	pressure := Observations{
		Signals: map[Signal]SignalObservation{SignalImageFsAvailable: signal("5Gi", "100Gi"), SignalMemoryAvailable: signal("1Gi", "8Gi")},
		Pods:    []PodStats{diskStats("web", "1Gi", "0")},
	}
	relieved := Observations{
		Signals: map[Signal]SignalObservation{SignalImageFsAvailable: signal("30Gi", "100Gi"), SignalMemoryAvailable: signal("1Gi", "8Gi")},
		Pods:    pressure.Pods,
	}
	tests := []struct {
		desc        string
		watch       bool // a sync watches reclaim requests
		after       *Observations
		answer      ReclaimReport
		wantAsked   bool
		wantEvicted []string
	}{
		{
			desc:      "reclaim frees enough: no pod is evicted",
			watch:     true,
			after:     &relieved,
			answer:    ReclaimReport{ImageBytesFreed: 25 << 30},
			wantAsked: true,
		},
		{
			desc:        "reclaim frees too little: a pod is evicted",
			watch:       true,
			answer:      ReclaimReport{ImageBytesFreed: 1 << 20},
			wantAsked:   true,
			wantEvicted: []string{"web"},
		},
		{
			desc:      "reclaim fails but the node is relieved all the same: no eviction",
			watch:     true,
			after:     &relieved,
			answer:    ReclaimReport{Err: errors.New("remove image: in use")},
			wantAsked: true,
		},
		{
			desc:        "no sync watching: not waited for, a pod is evicted",
			wantEvicted: []string{"web"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			src := &ScriptedSource{}
			src.Set(pressure)
			// A wait this long would fail the test's deadline: the
			// cases here must never reach it.
			m := NewManager(Config{Thresholds: mustThresholds(t, hard), Clock: newFakeClock(), NodeReclaimTimeout: time.Hour}, src)
			var r *reclaimer
			if tc.watch {
				r = startReclaimer(ctx, m, src, tc.after, tc.answer)
			}
			evicted, err := m.Synchronize(ctx, podsFunc(testPod("web")))
			if err != nil {
				t.Fatal(err)
			}
			if got := evictedNames(evicted); !slices.Equal(got, tc.wantEvicted) {
				t.Errorf("evicted %v, want %v", got, tc.wantEvicted)
			}
			if !tc.wantAsked {
				return
			}
			req := <-r.requests
			if req.Signal != SignalImageFsAvailable || !req.Containers || !req.Images || req.ID == "" {
				t.Errorf("request = %+v, want imagefs.available, containers and images, an id", req)
			}
			if err := <-r.reports; err != nil {
				t.Errorf("ReportReclaim: %v", err)
			}
			// The manager observed again after the report.
			if got := src.Calls(); got != 2 {
				t.Errorf("observed %d times, want 2 (before and after the reclaim)", got)
			}
		})
	}
}

// TestNodeLevelReclaimUnanswered is a sync that watches but never reports
// (one older than node-level reclaim ignores the request): the manager
// waits NodeReclaimTimeout, then evicts, and a late report is NotFound.
func TestNodeLevelReclaimUnanswered(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &ScriptedSource{}
	src.Set(Observations{Signals: map[Signal]SignalObservation{SignalNodeFsAvailable: signal("1Gi", "100Gi")}})
	m := NewManager(Config{
		Thresholds:         mustThresholds(t, ThresholdConfig{Hard: map[string]string{"nodefs.available": "10Gi"}}),
		Clock:              newFakeClock(),
		NodeReclaimTimeout: 50 * time.Millisecond,
	}, src)
	sub := m.SubscribeReclaims(ctx)
	evicted, err := m.Synchronize(ctx, podsFunc(testPod("web")))
	if err != nil {
		t.Fatal(err)
	}
	if got := evictedNames(evicted); !slices.Equal(got, []string{"web"}) {
		t.Errorf("evicted %v, want [web]", got)
	}
	req := <-sub
	if err := m.ReportReclaim(ctx, req.ID, ReclaimReport{}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("late ReportReclaim = %v, want NotFound", err)
	}
}

// TestNodeLevelReclaimFirstReportWins is two syncs watching: both get the
// request, the first report settles it and the second is NotFound.
func TestNodeLevelReclaimFirstReportWins(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &ScriptedSource{}
	src.Set(Observations{Signals: map[Signal]SignalObservation{SignalNodeFsAvailable: signal("1Gi", "100Gi")}})
	m := NewManager(Config{
		Thresholds:         mustThresholds(t, ThresholdConfig{Hard: map[string]string{"nodefs.available": "10Gi"}}),
		Clock:              newFakeClock(),
		NodeReclaimTimeout: time.Hour,
	}, src)
	first, second := m.SubscribeReclaims(ctx), m.SubscribeReclaims(ctx)
	done := make(chan []Eviction)
	go func() {
		evicted, _ := m.Synchronize(ctx, podsFunc(testPod("web")))
		done <- evicted
	}()
	req1, req2 := <-first, <-second
	if req1.ID != req2.ID {
		t.Fatalf("subscribers got different requests: %q and %q", req1.ID, req2.ID)
	}
	src.Set(Observations{Signals: map[Signal]SignalObservation{SignalNodeFsAvailable: signal("50Gi", "100Gi")}})
	if err := m.ReportReclaim(ctx, req1.ID, ReclaimReport{}); err != nil {
		t.Fatalf("first report: %v", err)
	}
	if evicted := <-done; len(evicted) != 0 {
		t.Errorf("evicted %v after a reclaim that relieved the node", evictedNames(evicted))
	}
	if err := m.ReportReclaim(ctx, req2.ID, ReclaimReport{}); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("second report = %v, want NotFound", err)
	}
}

// TestMemoryPressureAsksNoReclaim: only disk signals have node-level
// reclaim, so memory pressure evicts without asking.
func TestMemoryPressureAsksNoReclaim(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := &ScriptedSource{}
	src.Set(Observations{Signals: map[Signal]SignalObservation{SignalMemoryAvailable: signal("10Mi", "8Gi")}})
	m := NewManager(Config{
		Thresholds:         mustThresholds(t, ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}}),
		Clock:              newFakeClock(),
		NodeReclaimTimeout: time.Hour,
	}, src)
	sub := m.SubscribeReclaims(ctx)
	evicted, err := m.Synchronize(ctx, podsFunc(testPod("web")))
	if err != nil {
		t.Fatal(err)
	}
	if len(evicted) != 1 {
		t.Errorf("evicted %v, want one pod", evictedNames(evicted))
	}
	select {
	case req := <-sub:
		t.Errorf("memory pressure asked for %+v", req)
	default:
	}
}
