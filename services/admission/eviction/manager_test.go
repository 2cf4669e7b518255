package eviction

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// fakeClock is a hand-stepped Clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type podOption func(*v1.Pod)

// testPod makes a pod with one container "c"; its UID is its name so stats
// can be matched by name.
func testPod(name string, opts ...podOption) *v1.Pod {
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = name, "default", types.UID(name)
	p.Spec.Containers = []v1.Container{{Name: "c"}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func requests(res v1.ResourceName, q string) podOption {
	return func(p *v1.Pod) {
		if p.Spec.Containers[0].Resources.Requests == nil {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{}
		}
		p.Spec.Containers[0].Resources.Requests[res] = resource.MustParse(q)
	}
}

func prio(n int32) podOption {
	return func(p *v1.Pod) { p.Spec.Priority = &n }
}

func static() podOption {
	return func(p *v1.Pod) {
		p.Annotations = map[string]string{lifecycle.ConfigSourceAnnotationKey: "file"}
	}
}

func mustBytes(q string) uint64 {
	v := resource.MustParse(q)
	return uint64(v.Value())
}

func memStats(name, workingSet string) PodStats {
	b := mustBytes(workingSet)
	return PodStats{UID: types.UID(name), Name: name, Namespace: "default", MemoryWorkingSetBytes: b,
		Containers: []ContainerStats{{Name: "c", MemoryWorkingSetBytes: b}}}
}

func diskStats(name, rootfs, logs string) PodStats {
	return PodStats{UID: types.UID(name), Name: name, Namespace: "default",
		Containers: []ContainerStats{{Name: "c", Rootfs: FsUsage{UsedBytes: mustBytes(rootfs)}, Logs: FsUsage{UsedBytes: mustBytes(logs)}}}}
}

func pidStats(name string, procs uint64) PodStats {
	return PodStats{UID: types.UID(name), Name: name, Namespace: "default", ProcessCount: procs}
}

func signal(avail, capacity string) SignalObservation {
	return SignalObservation{Available: resource.MustParse(avail), Capacity: resource.MustParse(capacity)}
}

func mustThresholds(t *testing.T, cfg ThresholdConfig) []Threshold {
	t.Helper()
	ts, err := ParseThresholdConfig(cfg)
	if err != nil {
		t.Fatalf("ParseThresholdConfig: %v", err)
	}
	return ts
}

func podsFunc(pods ...*v1.Pod) ActivePodsFunc {
	return func() []*v1.Pod { return pods }
}

func evictedNames(evs []Eviction) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Pod.Name)
	}
	return out
}

func TestSynchronizeHardThreshold(t *testing.T) {
	hard := ThresholdConfig{Hard: map[string]string{
		"memory.available": "100Mi", "nodefs.available": "10Gi", "imagefs.available": "10Gi", "pid.available": "1000",
	}}
	memLow := map[Signal]SignalObservation{SignalMemoryAvailable: signal("50Mi", "8Gi")}
	tests := []struct {
		desc           string
		signals        map[Signal]SignalObservation
		pods           []*v1.Pod
		stats          []PodStats
		wantEvicted    []string
		wantSignal     Signal
		wantConditions []v1.NodeConditionType
		wantMessage    string
	}{
		{
			desc:    "no threshold met: no condition, no eviction",
			signals: map[Signal]SignalObservation{SignalMemoryAvailable: signal("1Gi", "8Gi"), SignalNodeFsAvailable: signal("50Gi", "100Gi")},
			pods:    []*v1.Pod{testPod("be")},
			stats:   []PodStats{memStats("be", "1Gi")},
		},
		{
			desc:           "BestEffort over its (zero) request goes before Burstable under request",
			signals:        memLow,
			pods:           []*v1.Pod{testPod("under", requests(v1.ResourceMemory, "1Gi")), testPod("be")},
			stats:          []PodStats{memStats("under", "900Mi"), memStats("be", "100Mi")},
			wantEvicted:    []string{"be"},
			wantSignal:     SignalMemoryAvailable,
			wantConditions: []v1.NodeConditionType{v1.NodeMemoryPressure},
			wantMessage: "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. " +
				"Container c was using 100Mi, request is 0, has larger consumption of memory. ",
		},
		{
			desc:        "kubelet's message for a container over its request",
			signals:     memLow,
			pods:        []*v1.Pod{testPod("web", requests(v1.ResourceMemory, "1Gi"))},
			stats:       []PodStats{memStats("web", "2Gi")},
			wantEvicted: []string{"web"}, wantSignal: SignalMemoryAvailable,
			wantConditions: []v1.NodeConditionType{v1.NodeMemoryPressure},
			wantMessage: "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. " +
				"Container c was using 2Gi, request is 1Gi, has larger consumption of memory. ",
		},
		{
			desc:    "among pods over requests, lower priority first",
			signals: memLow,
			pods: []*v1.Pod{
				testPod("high", prio(1000), requests(v1.ResourceMemory, "100Mi")),
				testPod("low", prio(10), requests(v1.ResourceMemory, "100Mi")),
			},
			stats:       []PodStats{memStats("high", "4Gi"), memStats("low", "200Mi")},
			wantEvicted: []string{"low"}, wantSignal: SignalMemoryAvailable,
			wantConditions: []v1.NodeConditionType{v1.NodeMemoryPressure},
		},
		{
			desc:    "same priority: largest usage above request first",
			signals: memLow,
			pods: []*v1.Pod{
				testPod("a", requests(v1.ResourceMemory, "1Gi")),
				testPod("b", requests(v1.ResourceMemory, "100Mi")),
			},
			stats:       []PodStats{memStats("a", "1536Mi"), memStats("b", "1Gi")},
			wantEvicted: []string{"b"}, wantSignal: SignalMemoryAvailable,
			wantConditions: []v1.NodeConditionType{v1.NodeMemoryPressure},
		},
		{
			desc:        "pod without stats goes first",
			signals:     memLow,
			pods:        []*v1.Pod{testPod("measured"), testPod("unmeasured", requests(v1.ResourceMemory, "1Gi"))},
			stats:       []PodStats{memStats("measured", "3Gi")},
			wantEvicted: []string{"unmeasured"}, wantSignal: SignalMemoryAvailable,
			wantConditions: []v1.NodeConditionType{v1.NodeMemoryPressure},
			wantMessage:    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ",
		},
		{
			desc:    "critical pods are skipped for the next in rank",
			signals: memLow,
			pods: []*v1.Pod{
				testPod("static", static()),
				testPod("system", prio(lifecycle.SystemCriticalPriority)),
				testPod("normal", requests(v1.ResourceMemory, "1Gi")),
			},
			stats:       []PodStats{memStats("static", "6Gi"), memStats("system", "5Gi"), memStats("normal", "10Mi")},
			wantEvicted: []string{"normal"}, wantSignal: SignalMemoryAvailable,
			wantConditions: []v1.NodeConditionType{v1.NodeMemoryPressure},
		},
		{
			desc:           "only critical pods: condition but no eviction",
			signals:        memLow,
			pods:           []*v1.Pod{testPod("static", static()), testPod("system", prio(lifecycle.SystemCriticalPriority))},
			stats:          []PodStats{memStats("static", "6Gi"), memStats("system", "5Gi")},
			wantConditions: []v1.NodeConditionType{v1.NodeMemoryPressure},
		},
		{
			desc:    "disk pressure ranks by ephemeral storage over request",
			signals: map[Signal]SignalObservation{SignalNodeFsAvailable: signal("5Gi", "100Gi"), SignalImageFsAvailable: signal("5Gi", "100Gi")},
			pods: []*v1.Pod{
				testPod("big-under", requests(v1.ResourceEphemeralStorage, "20Gi")),
				testPod("small-over", requests(v1.ResourceEphemeralStorage, "100Mi")),
			},
			stats:       []PodStats{diskStats("big-under", "10Gi", "1Gi"), diskStats("small-over", "400Mi", "100Mi")},
			wantEvicted: []string{"small-over"}, wantSignal: SignalImageFsAvailable,
			wantConditions: []v1.NodeConditionType{v1.NodeDiskPressure},
			wantMessage: "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 5Gi. " +
				"Container c was using 500Mi, request is 100Mi, has larger consumption of ephemeral-storage. ",
		},
		{
			desc:        "pid pressure ranks by priority, then processes",
			signals:     map[Signal]SignalObservation{SignalPIDAvailable: signal("500", "32768")},
			pods:        []*v1.Pod{testPod("many", prio(100)), testPod("few-a"), testPod("few-b")},
			stats:       []PodStats{pidStats("many", 5000), pidStats("few-a", 10), pidStats("few-b", 20)},
			wantEvicted: []string{"few-b"}, wantSignal: SignalPIDAvailable,
			wantConditions: []v1.NodeConditionType{v1.NodePIDPressure},
			wantMessage:    "The node was low on resource: pids. Threshold quantity: 1k, available: 500. ",
		},
		{
			desc: "memory is reclaimed before disk when both are met",
			signals: map[Signal]SignalObservation{
				SignalPIDAvailable: signal("500", "32768"), SignalNodeFsAvailable: signal("5Gi", "100Gi"),
				SignalMemoryAvailable: signal("50Mi", "8Gi"),
			},
			pods:        []*v1.Pod{testPod("disk-hog"), testPod("mem-hog")},
			stats:       []PodStats{diskStats("disk-hog", "50Gi", "0"), memStats("mem-hog", "4Gi")},
			wantEvicted: []string{"mem-hog"}, wantSignal: SignalMemoryAvailable,
			wantConditions: []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			src := &ScriptedSource{}
			src.Set(Observations{Signals: tc.signals, Pods: tc.stats})
			m := NewManager(Config{Thresholds: mustThresholds(t, hard), Clock: newFakeClock(), MaxPodGracePeriodSeconds: 30}, src)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sub := m.Subscribe(ctx)

			evs, err := m.Synchronize(ctx, podsFunc(tc.pods...))
			if err != nil {
				t.Fatalf("Synchronize: %v", err)
			}
			if got := evictedNames(evs); !slices.Equal(got, tc.wantEvicted) {
				t.Fatalf("evicted %v, want %v", got, tc.wantEvicted)
			}
			if got := m.NodeConditions(ctx); !slices.Equal(got, tc.wantConditions) {
				t.Errorf("NodeConditions() = %v, want %v", got, tc.wantConditions)
			}
			if len(evs) == 0 {
				select {
				case ev := <-sub:
					t.Errorf("subscriber got eviction of %s, want none", ev.Pod.Name)
				default:
				}
				return
			}
			ev := evs[0]
			if ev.Reason != "Evicted" || ev.Signal != tc.wantSignal || ev.GracePeriodOverride != ImmediateEvictionGracePeriodSeconds {
				t.Errorf("eviction reason %q signal %q grace %d, want Evicted %q %d",
					ev.Reason, ev.Signal, ev.GracePeriodOverride, tc.wantSignal, ImmediateEvictionGracePeriodSeconds)
			}
			if tc.wantMessage != "" && ev.Message != tc.wantMessage {
				t.Errorf("message:\n got %q\nwant %q", ev.Message, tc.wantMessage)
			}
			if ev.Condition.Type != v1.DisruptionTarget || ev.Condition.Reason != v1.PodReasonTerminationByKubelet || ev.Condition.Message != ev.Message {
				t.Errorf("pod condition = %+v, want DisruptionTarget/TerminationByKubelet with the message", ev.Condition)
			}
			select {
			case got := <-sub:
				if got.Pod.UID != ev.Pod.UID {
					t.Errorf("subscriber got %s, want %s", got.Pod.Name, ev.Pod.Name)
				}
			default:
				t.Errorf("subscriber got nothing")
			}
		})
	}
}

func TestSoftThresholdGracePeriod(t *testing.T) {
	cfg := ThresholdConfig{
		Soft:            map[string]string{"memory.available": "1Gi"},
		SoftGracePeriod: map[string]string{"memory.available": "1m30s"},
	}
	clock := newFakeClock()
	src := &ScriptedSource{}
	m := NewManager(Config{Thresholds: mustThresholds(t, cfg), Clock: clock, MaxPodGracePeriodSeconds: 45}, src)
	ctx := context.Background()
	pods := podsFunc(testPod("web"))
	low := Observations{Signals: map[Signal]SignalObservation{SignalMemoryAvailable: signal("500Mi", "8Gi")}, Pods: []PodStats{memStats("web", "2Gi")}}
	ok := Observations{Signals: map[Signal]SignalObservation{SignalMemoryAvailable: signal("4Gi", "8Gi")}, Pods: []PodStats{memStats("web", "2Gi")}}

	steps := []struct {
		desc          string
		advance       time.Duration
		obs           Observations
		wantEvict     bool
		wantCondition bool
	}{
		{desc: "first met: condition at once, no eviction yet", obs: low, wantCondition: true},
		{desc: "met for 1m: still within grace", advance: time.Minute, obs: low, wantCondition: true},
		{desc: "met for 1m29s: still within grace", advance: 29 * time.Second, obs: low, wantCondition: true},
		{desc: "met for 1m30s: grace passed, evict", advance: time.Second, obs: low, wantEvict: true, wantCondition: true},
		{desc: "recovered: no eviction, condition kept by transition period", advance: time.Second, obs: ok, wantCondition: true},
		{desc: "met again: grace starts over", advance: time.Second, obs: low, wantCondition: true},
		{desc: "met again for 1m: within the new grace", advance: time.Minute, obs: low, wantCondition: true},
	}
	for _, s := range steps {
		clock.Step(s.advance)
		src.Set(s.obs)
		evs, err := m.Synchronize(ctx, pods)
		if err != nil {
			t.Fatalf("%s: Synchronize: %v", s.desc, err)
		}
		if (len(evs) == 1) != s.wantEvict {
			t.Errorf("%s: evicted %v, want eviction=%v", s.desc, evictedNames(evs), s.wantEvict)
		}
		if len(evs) == 1 && evs[0].GracePeriodOverride != 45 {
			t.Errorf("%s: grace period override %d, want the max pod grace period 45", s.desc, evs[0].GracePeriodOverride)
		}
		if got := len(m.NodeConditions(ctx)) == 1; got != s.wantCondition {
			t.Errorf("%s: NodeConditions() = %v, want MemoryPressure=%v", s.desc, m.NodeConditions(ctx), s.wantCondition)
		}
	}
}

func TestPressureTransitionPeriod(t *testing.T) {
	clock := newFakeClock()
	start := clock.Now()
	src := &ScriptedSource{}
	m := NewManager(Config{
		Thresholds:               mustThresholds(t, ThresholdConfig{Hard: map[string]string{"nodefs.available": "10Gi"}}),
		PressureTransitionPeriod: 5 * time.Minute,
		Clock:                    clock,
	}, src)
	ctx := context.Background()
	low := Observations{Signals: map[Signal]SignalObservation{SignalNodeFsAvailable: signal("1Gi", "100Gi")}}
	ok := Observations{Signals: map[Signal]SignalObservation{SignalNodeFsAvailable: signal("50Gi", "100Gi")}}

	steps := []struct {
		desc           string
		at             time.Duration // since start
		obs            Observations
		wantPressure   bool
		wantTransition time.Duration // of the DiskPressure condition, since start
	}{
		{desc: "met", at: 0, obs: low, wantPressure: true, wantTransition: 0},
		{desc: "recovered 1m later: kept", at: time.Minute, obs: ok, wantPressure: true, wantTransition: 0},
		{desc: "4m59s after last met: kept", at: 4*time.Minute + 59*time.Second, obs: ok, wantPressure: true, wantTransition: 0},
		{desc: "5m after last met: cleared", at: 5 * time.Minute, obs: ok, wantPressure: false, wantTransition: 5 * time.Minute},
		{desc: "met again", at: 6 * time.Minute, obs: low, wantPressure: true, wantTransition: 6 * time.Minute},
		{desc: "met again 3m later: period restarts from here", at: 9 * time.Minute, obs: low, wantPressure: true, wantTransition: 6 * time.Minute},
		{desc: "recovered, 4m after last met: kept", at: 13 * time.Minute, obs: ok, wantPressure: true, wantTransition: 6 * time.Minute},
		{desc: "recovered, 5m after last met: cleared", at: 14 * time.Minute, obs: ok, wantPressure: false, wantTransition: 14 * time.Minute},
	}
	for _, s := range steps {
		clock.Step(start.Add(s.at).Sub(clock.Now()))
		src.Set(s.obs)
		if _, err := m.Synchronize(ctx, podsFunc()); err != nil {
			t.Fatalf("%s: Synchronize: %v", s.desc, err)
		}
		gotPressure := slices.Contains(m.NodeConditions(ctx), v1.NodeDiskPressure)
		if gotPressure != s.wantPressure {
			t.Errorf("%s: DiskPressure in NodeConditions() = %v, want %v", s.desc, gotPressure, s.wantPressure)
		}
		var disk v1.NodeCondition
		for _, c := range m.Conditions() {
			if c.Type == v1.NodeDiskPressure {
				disk = c
			}
		}
		wantStatus, wantReason := v1.ConditionFalse, "KubeletHasNoDiskPressure"
		if s.wantPressure {
			wantStatus, wantReason = v1.ConditionTrue, "KubeletHasDiskPressure"
		}
		if disk.Status != wantStatus || disk.Reason != wantReason {
			t.Errorf("%s: DiskPressure condition %s/%s, want %s/%s", s.desc, disk.Status, disk.Reason, wantStatus, wantReason)
		}
		if got := disk.LastTransitionTime.Time.Sub(start); got != s.wantTransition {
			t.Errorf("%s: last transition at +%v, want +%v", s.desc, got, s.wantTransition)
		}
		if !disk.LastHeartbeatTime.Time.Equal(clock.Now()) {
			t.Errorf("%s: heartbeat %v, want %v", s.desc, disk.LastHeartbeatTime, clock.Now())
		}
	}
}

func TestConditionsBeforeFirstSync(t *testing.T) {
	m := NewManager(Config{Clock: newFakeClock()}, &ScriptedSource{})
	got := m.Conditions()
	var types []v1.NodeConditionType
	for _, c := range got {
		types = append(types, c.Type)
		if c.Status != v1.ConditionFalse {
			t.Errorf("%s = %s before any observation, want False", c.Type, c.Status)
		}
	}
	if want := []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}; !slices.Equal(types, want) {
		t.Errorf("condition types %v, want %v", types, want)
	}
}

func TestMinimumReclaim(t *testing.T) {
	clock := newFakeClock()
	src := &ScriptedSource{}
	m := NewManager(Config{
		Thresholds: mustThresholds(t, ThresholdConfig{
			Hard:           map[string]string{"memory.available": "100Mi"},
			MinimumReclaim: map[string]string{"memory.available": "50Mi"},
		}),
		Clock: clock,
	}, src)
	ctx := context.Background()
	steps := []struct {
		desc      string
		available string
		wantEvict bool
	}{
		{desc: "below threshold", available: "90Mi", wantEvict: true},
		{desc: "above threshold, below threshold+min-reclaim: keep evicting", available: "120Mi", wantEvict: true},
		{desc: "above threshold+min-reclaim: resolved", available: "151Mi"},
		{desc: "back between: not met again without crossing the threshold", available: "120Mi"},
	}
	for _, s := range steps {
		clock.Step(10 * time.Second)
		src.Set(Observations{Signals: map[Signal]SignalObservation{SignalMemoryAvailable: signal(s.available, "8Gi")}})
		evs, err := m.Synchronize(ctx, podsFunc(testPod("web")))
		if err != nil {
			t.Fatalf("%s: %v", s.desc, err)
		}
		if (len(evs) == 1) != s.wantEvict {
			t.Errorf("%s: evicted %v, want eviction=%v", s.desc, evictedNames(evs), s.wantEvict)
		}
	}
}

func TestStaleStatsDoNotEvictAgain(t *testing.T) {
	clock := newFakeClock()
	src := &ScriptedSource{}
	m := NewManager(Config{Thresholds: mustThresholds(t, ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}}), Clock: clock}, src)
	ctx := context.Background()
	measured := clock.Now()
	obs := func(at time.Time) Observations {
		o := signal("10Mi", "8Gi")
		o.Time = at
		return Observations{Signals: map[Signal]SignalObservation{SignalMemoryAvailable: o}}
	}
	pods := podsFunc(testPod("a"), testPod("b"))
	steps := []struct {
		desc      string
		obs       Observations
		wantEvict bool
	}{
		{desc: "first observation", obs: obs(measured), wantEvict: true},
		{desc: "same measurement again", obs: obs(measured), wantEvict: false},
		{desc: "newer measurement", obs: obs(measured.Add(time.Second)), wantEvict: true},
	}
	for _, s := range steps {
		clock.Step(time.Second)
		src.Set(s.obs)
		evs, err := m.Synchronize(ctx, pods)
		if err != nil {
			t.Fatalf("%s: %v", s.desc, err)
		}
		if (len(evs) == 1) != s.wantEvict {
			t.Errorf("%s: evicted %v, want eviction=%v", s.desc, evictedNames(evs), s.wantEvict)
		}
		if len(m.NodeConditions(ctx)) != 1 {
			t.Errorf("%s: NodeConditions() = %v, want [MemoryPressure] regardless of staleness", s.desc, m.NodeConditions(ctx))
		}
	}
}

func TestSynchronizeObserveError(t *testing.T) {
	clock := newFakeClock()
	src := &ScriptedSource{}
	m := NewManager(Config{Thresholds: mustThresholds(t, ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}}), Clock: clock}, src)
	ctx := context.Background()
	src.Set(Observations{Signals: map[Signal]SignalObservation{SignalMemoryAvailable: signal("10Mi", "8Gi")}})
	if _, err := m.Synchronize(ctx, podsFunc()); err != nil {
		t.Fatal(err)
	}
	src.Fail(errdefs.ErrUnavailable)
	clock.Step(time.Hour) // past the transition period: a sync that ran would clear the condition
	evs, err := m.Synchronize(ctx, podsFunc(testPod("web")))
	if !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("Synchronize error = %v, want one wrapping ErrUnavailable", err)
	}
	if len(evs) != 0 {
		t.Errorf("evicted %v on a failed observation", evictedNames(evs))
	}
	if got := m.NodeConditions(ctx); !slices.Equal(got, []v1.NodeConditionType{v1.NodeMemoryPressure}) {
		t.Errorf("NodeConditions() = %v after a failed observation, want the previous [MemoryPressure]", got)
	}
}

func TestNoThresholdsNeverObserves(t *testing.T) {
	src := &ScriptedSource{}
	m := NewManager(Config{}, src)
	if _, err := m.Synchronize(context.Background(), podsFunc(testPod("a"))); err != nil {
		t.Fatal(err)
	}
	if src.Calls() != 0 {
		t.Errorf("Observe called %d times with no thresholds configured", src.Calls())
	}
}

// TestAdmitWithManager checks the manager as the PressureSource of the
// existing admission handler.
func TestAdmitWithManager(t *testing.T) {
	cfg := ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi", "nodefs.available": "10Gi"}}
	tests := []struct {
		desc        string
		signals     map[Signal]SignalObservation
		pod         *v1.Pod
		wantAdmit   bool
		wantMessage string
	}{
		{
			desc:      "no pressure admits BestEffort",
			signals:   map[Signal]SignalObservation{SignalNodeFsAvailable: signal("50Gi", "100Gi"), SignalMemoryAvailable: signal("2Gi", "8Gi")},
			pod:       testPod("be"),
			wantAdmit: true,
		},
		{
			desc:        "disk pressure rejects Burstable",
			signals:     map[Signal]SignalObservation{SignalNodeFsAvailable: signal("1Gi", "100Gi"), SignalMemoryAvailable: signal("2Gi", "8Gi")},
			pod:         testPod("burst", requests(v1.ResourceMemory, "64Mi")),
			wantMessage: "The node had condition: [DiskPressure]. ",
		},
		{
			desc:      "disk pressure admits a critical pod",
			signals:   map[Signal]SignalObservation{SignalNodeFsAvailable: signal("1Gi", "100Gi")},
			pod:       testPod("static", static()),
			wantAdmit: true,
		},
		{
			desc:      "memory pressure alone admits Burstable",
			signals:   map[Signal]SignalObservation{SignalNodeFsAvailable: signal("50Gi", "100Gi"), SignalMemoryAvailable: signal("50Mi", "8Gi")},
			pod:       testPod("burst", requests(v1.ResourceMemory, "64Mi")),
			wantAdmit: true,
		},
		{
			desc:        "memory and disk pressure reject Burstable",
			signals:     map[Signal]SignalObservation{SignalNodeFsAvailable: signal("1Gi", "100Gi"), SignalMemoryAvailable: signal("50Mi", "8Gi")},
			pod:         testPod("burst", requests(v1.ResourceMemory, "64Mi")),
			wantMessage: "The node had condition: [MemoryPressure DiskPressure]. ",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			src := &ScriptedSource{}
			src.Set(Observations{Signals: tc.signals})
			m := NewManager(Config{Thresholds: mustThresholds(t, cfg), Clock: newFakeClock()}, src)
			ctx := context.Background()
			if _, err := m.Synchronize(ctx, podsFunc()); err != nil {
				t.Fatal(err)
			}
			got := NewAdmitHandler(m).Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: tc.pod})
			if got.Admit != tc.wantAdmit {
				t.Fatalf("Admit = %+v, want admit=%v", got, tc.wantAdmit)
			}
			if !tc.wantAdmit && (got.Reason != "Evicted" || got.Message != tc.wantMessage) {
				t.Errorf("rejection %q %q, want Evicted %q", got.Reason, got.Message, tc.wantMessage)
			}
		})
	}
}

func TestSubscribeFanOutAndClose(t *testing.T) {
	src := &ScriptedSource{}
	src.Set(Observations{Signals: map[Signal]SignalObservation{SignalMemoryAvailable: signal("10Mi", "8Gi")}})
	m := NewManager(Config{Thresholds: mustThresholds(t, ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}}), Clock: newFakeClock()}, src)
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	sub1, sub2 := m.Subscribe(ctx1), m.Subscribe(ctx2)

	if _, err := m.Synchronize(context.Background(), podsFunc(testPod("web"))); err != nil {
		t.Fatal(err)
	}
	for i, sub := range []<-chan Eviction{sub1, sub2} {
		select {
		case ev := <-sub:
			if ev.Pod.Name != "web" {
				t.Errorf("subscriber %d got %s, want web", i, ev.Pod.Name)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("subscriber %d got nothing", i)
		}
	}
	cancel1()
	select {
	case _, open := <-sub1:
		if open {
			t.Errorf("cancelled subscriber received an eviction instead of being closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("cancelled subscriber's channel was not closed")
	}
	// The remaining subscriber still receives.
	if _, err := m.Synchronize(context.Background(), podsFunc(testPod("api"))); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-sub2:
		if ev.Pod.Name != "api" {
			t.Errorf("got %s, want api", ev.Pod.Name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("remaining subscriber got nothing")
	}
}

// TestRun drives the loop with the real clock: the evicted pod leaves the
// active pods, so Run moves on and evicts the next one while pressure lasts.
func TestRun(t *testing.T) {
	src := &ScriptedSource{}
	src.Set(Observations{
		Signals: map[Signal]SignalObservation{SignalMemoryAvailable: signal("10Mi", "8Gi")},
		Pods:    []PodStats{memStats("first", "2Gi"), memStats("second", "1Gi")},
	})
	m := NewManager(Config{
		Thresholds:         mustThresholds(t, ThresholdConfig{Hard: map[string]string{"memory.available": "100Mi"}}),
		PodCleanupPollFreq: time.Millisecond,
	}, src)

	var mu sync.Mutex
	active := []*v1.Pod{testPod("first"), testPod("second")}
	activePods := func() []*v1.Pod {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(active)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sub := m.Subscribe(ctx)
	done := make(chan struct{})
	go func() {
		m.Run(ctx, activePods, time.Millisecond)
		close(done)
	}()

	for _, want := range []string{"first", "second"} {
		select {
		case ev := <-sub:
			if ev.Pod.Name != want {
				t.Fatalf("evicted %s, want %s", ev.Pod.Name, want)
			}
			// What sync would do: stop the pod, which leaves the active pods.
			mu.Lock()
			active = slices.DeleteFunc(active, func(p *v1.Pod) bool { return p.UID == ev.Pod.UID })
			mu.Unlock()
		case <-time.After(10 * time.Second):
			t.Fatalf("no eviction of %s", want)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
