package events

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time       { return c.now }
func (c *fakeClock) Step(d time.Duration) { c.now = c.now.Add(d) }
func newClock() *fakeClock                { return &fakeClock{now: t0} }
func newRec(c *fakeClock, o Options) *Recorder {
	o.Now = c.Now
	if o.NodeName == "" {
		o.NodeName = "node-a"
	}
	return New(context.Background(), o)
}

func testPod(ns, name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid")},
		Spec: v1.PodSpec{
			InitContainers:      []v1.Container{{Name: "init"}},
			Containers:          []v1.Container{{Name: "app"}, {Name: "side"}},
			EphemeralContainers: []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}}},
		},
	}
}

// step is one action of a scripted test: advance the clock, then record.
type step struct {
	after     time.Duration
	container string // "" records about the pod
	typ       string
	reason    string
	msg       string
}

// want describes one listed event; times are offsets from t0.
type want struct {
	reason, msg, fieldPath string
	count                  int32
	first, last            time.Duration
}

func play(r *Recorder, c *fakeClock, pod *v1.Pod, steps []step) {
	for _, s := range steps {
		c.Step(s.after)
		typ := s.typ
		if typ == "" {
			typ = v1.EventTypeNormal
		}
		if s.container != "" {
			r.EventfContainer(pod, s.container, typ, s.reason, "%s", s.msg)
		} else {
			r.Eventf(pod, typ, s.reason, "%s", s.msg)
		}
	}
}

func checkList(t *testing.T, got []v1.Event, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		for _, e := range got {
			t.Logf("got %s %q x%d", e.Reason, e.Message, e.Count)
		}
		t.Fatalf("got %d events, want %d", len(got), len(wants))
	}
	for i, w := range wants {
		e := got[i]
		if e.Reason != w.reason || e.Message != w.msg || e.Count != w.count || e.InvolvedObject.FieldPath != w.fieldPath {
			t.Errorf("event %d = %s %q x%d path %q, want %s %q x%d path %q", i,
				e.Reason, e.Message, e.Count, e.InvolvedObject.FieldPath, w.reason, w.msg, w.count, w.fieldPath)
		}
		if !e.FirstTimestamp.Time.Equal(t0.Add(w.first)) || !e.LastTimestamp.Time.Equal(t0.Add(w.last)) {
			t.Errorf("event %d times first=%v last=%v, want first=%v last=%v", i,
				e.FirstTimestamp.Sub(t0), e.LastTimestamp.Sub(t0), w.first, w.last)
		}
	}
}

func TestCorrelation(t *testing.T) {
	tenMessages := func(after time.Duration) []step {
		var s []step
		for i := 0; i < 10; i++ {
			s = append(s, step{after: after, typ: v1.EventTypeWarning, reason: ContainerUnhealthy, msg: fmt.Sprintf("probe failed %d", i)})
		}
		return s
	}
	cases := []struct {
		desc  string
		opts  Options
		steps []step
		want  []want
	}{
		{
			desc: "identical events fold into one with count and first/last times",
			steps: []step{
				{container: "app", typ: v1.EventTypeWarning, reason: BackOffStartContainer, msg: "Back-off restarting failed container"},
				{after: 10 * time.Second, container: "app", typ: v1.EventTypeWarning, reason: BackOffStartContainer, msg: "Back-off restarting failed container"},
				{after: 20 * time.Second, container: "app", typ: v1.EventTypeWarning, reason: BackOffStartContainer, msg: "Back-off restarting failed container"},
			},
			want: []want{{reason: "BackOff", msg: "Back-off restarting failed container", fieldPath: "spec.containers{app}", count: 3, first: 0, last: 30 * time.Second}},
		},
		{
			desc: "different messages or containers stay separate events",
			steps: []step{
				{container: "app", reason: PullingImage, msg: `Pulling image "a"`},
				{after: time.Second, container: "side", reason: PullingImage, msg: `Pulling image "a"`},
				{after: time.Second, container: "app", reason: PulledImage, msg: `Successfully pulled image "a"`},
			},
			want: []want{
				{reason: "Pulling", msg: `Pulling image "a"`, fieldPath: "spec.containers{app}", count: 1, first: 0, last: 0},
				{reason: "Pulling", msg: `Pulling image "a"`, fieldPath: "spec.containers{side}", count: 1, first: time.Second, last: time.Second},
				{reason: "Pulled", msg: `Successfully pulled image "a"`, fieldPath: "spec.containers{app}", count: 1, first: 2 * time.Second, last: 2 * time.Second},
			},
		},
		{
			desc:  "the tenth distinct message of one reason is combined, and later ones count on it",
			steps: append(tenMessages(time.Second), step{after: time.Second, typ: v1.EventTypeWarning, reason: ContainerUnhealthy, msg: "probe failed 10"}),
			want: func() []want {
				var w []want
				for i := 0; i < 9; i++ {
					d := time.Duration(i+1) * time.Second
					w = append(w, want{reason: "Unhealthy", msg: fmt.Sprintf("probe failed %d", i), count: 1, first: d, last: d})
				}
				return append(w, want{reason: "Unhealthy", msg: combinedPrefix + "probe failed 10", count: 2, first: 10 * time.Second, last: 11 * time.Second})
			}(),
		},
		{
			desc:  "distinct messages further apart than the aggregate interval are not combined",
			opts:  Options{AggregateInterval: time.Minute},
			steps: tenMessages(2 * time.Minute),
			want: func() []want {
				var w []want
				for i := 0; i < 10; i++ {
					d := time.Duration(i+1) * 2 * time.Minute
					w = append(w, want{reason: "Unhealthy", msg: fmt.Sprintf("probe failed %d", i), count: 1, first: d, last: d})
				}
				return w
			}(),
		},
		{
			desc: "the spam filter drops events past the burst until a token refills",
			opts: Options{SpamBurst: 2, SpamQPS: 0.1},
			steps: []step{
				{reason: KillingContainer, msg: "m"},
				{reason: KillingContainer, msg: "m"},
				{reason: KillingContainer, msg: "m"},                          // filtered: bucket empty
				{after: 10 * time.Second, reason: KillingContainer, msg: "m"}, // one token back
			},
			want: []want{{reason: "Killing", msg: "m", count: 3, first: 0, last: 10 * time.Second}},
		},
		{
			desc: "the spam filter counts Normal and Warning separately",
			opts: Options{SpamBurst: 1, SpamQPS: 0.001},
			steps: []step{
				{reason: StartedContainer, msg: "started"},
				{typ: v1.EventTypeWarning, reason: FailedSync, msg: "sync failed"},
				{reason: CreatedContainer, msg: "created"}, // filtered: Normal bucket empty
			},
			want: []want{
				{reason: "Started", msg: "started", count: 1},
				{reason: "FailedSync", msg: "sync failed", count: 1},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			c := newClock()
			r := newRec(c, tc.opts)
			pod := testPod("ns", "web")
			play(r, c, pod, tc.steps)
			checkList(t, r.List("ns", "web"), tc.want)
		})
	}
}

func TestListOrdersByLastTimestamp(t *testing.T) {
	c := newClock()
	r := newRec(c, Options{})
	pod := testPod("ns", "web")
	play(r, c, pod, []step{
		{reason: SandboxChanged, msg: "Pod sandbox changed, it will be killed and re-created."},
		{after: time.Second, reason: CreatedContainer, msg: "Created container app"},
		{after: time.Second, reason: StartedContainer, msg: "Started container app"},
		// A repeat of the first event makes it the most recent.
		{after: time.Second, reason: SandboxChanged, msg: "Pod sandbox changed, it will be killed and re-created."},
	})
	var got []string
	for _, e := range r.List("ns", "web") {
		got = append(got, e.Reason)
	}
	want := []string{"Created", "Started", "SandboxChanged"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
	if evs := r.List("ns", "other"); len(evs) != 0 {
		t.Fatalf("List of an unknown pod = %d events, want 0", len(evs))
	}
}

func TestEventFields(t *testing.T) {
	cases := []struct {
		desc      string
		container string
		wantPath  string
	}{
		{desc: "pod event has no field path", container: "", wantPath: ""},
		{desc: "regular container", container: "app", wantPath: "spec.containers{app}"},
		{desc: "init container", container: "init", wantPath: "spec.initContainers{init}"},
		{desc: "ephemeral container", container: "debug", wantPath: "spec.ephemeralContainers{debug}"},
		{desc: "container not in the spec", container: "gone", wantPath: "spec.containers{gone}"},
	}
	nameRE := regexp.MustCompile(`^web\.[0-9a-f]+$`)
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			c := newClock()
			r := newRec(c, Options{NodeName: "node-7"})
			pod := testPod("ns", "web")
			play(r, c, pod, []step{{container: tc.container, typ: v1.EventTypeWarning, reason: FailedPostStartHook, msg: "hook failed"}})
			evs := r.List("ns", "web")
			if len(evs) != 1 {
				t.Fatalf("got %d events, want 1", len(evs))
			}
			e := evs[0]
			io := e.InvolvedObject
			if io.Kind != "Pod" || io.APIVersion != "v1" || io.Namespace != "ns" || io.Name != "web" || io.UID != "web-uid" || io.FieldPath != tc.wantPath {
				t.Errorf("involvedObject = %+v, want Pod ns/web uid web-uid path %q", io, tc.wantPath)
			}
			if e.Source.Component != "splitlet" || e.Source.Host != "node-7" || e.ReportingController != "splitlet" || e.ReportingInstance != "node-7" {
				t.Errorf("source = %+v reporting %q/%q", e.Source, e.ReportingController, e.ReportingInstance)
			}
			if e.Namespace != "ns" || !nameRE.MatchString(e.Name) || e.Type != v1.EventTypeWarning {
				t.Errorf("name %q namespace %q type %q", e.Name, e.Namespace, e.Type)
			}
		})
	}
}

func TestNamesUniqueWithinOneTick(t *testing.T) {
	c := newClock()
	r := newRec(c, Options{})
	pod := testPod("ns", "web")
	for i := 0; i < 5; i++ {
		r.Eventf(pod, v1.EventTypeNormal, CreatedContainer, "Created container c%d", i)
	}
	seen := map[string]bool{}
	for _, e := range r.List("ns", "web") {
		if seen[e.Name] {
			t.Fatalf("duplicate event name %q", e.Name)
		}
		seen[e.Name] = true
	}
	if len(seen) != 5 {
		t.Fatalf("got %d names, want 5", len(seen))
	}
}

func TestRejectedEvents(t *testing.T) {
	cases := []struct {
		desc   string
		record func(r *Recorder)
	}{
		{desc: "unsupported type", record: func(r *Recorder) {
			r.Event(testPod("ns", "web"), "Critical", FailedSync, "x")
		}},
		{desc: "nil pod", record: func(r *Recorder) {
			r.Event(nil, v1.EventTypeNormal, FailedSync, "x")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			r := newRec(newClock(), Options{})
			tc.record(r)
			if n := r.Stats().Stored; n != 0 {
				t.Fatalf("stored %d events, want 0", n)
			}
		})
	}
}
