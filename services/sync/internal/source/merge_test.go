package source

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodConfigMerge(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		desc   string
		before []*v1.Pod // Set first
		op     Operation
		pods   []*v1.Pod
		want   []string
		// after is the source's whole set once merged: a Set of it must
		// send nothing, proving Merge left the other pods alone.
		after []*v1.Pod
	}{
		{
			desc:   "a new pod is added, the others are untouched",
			before: []*v1.Pod{testPod("a", "x")},
			op:     ADD,
			pods:   []*v1.Pod{testPod("b", "x")},
			want:   []string{"ADD:b"},
			after:  []*v1.Pod{testPod("a", "x"), testPod("b", "x")},
		},
		{
			desc:   "the op given does not decide: a changed pod sent as ADD is an update",
			before: []*v1.Pod{testPod("a", "x"), testPod("b", "x")},
			op:     ADD,
			pods:   []*v1.Pod{testPod("a", "y")},
			want:   []string{"UPDATE:a"},
			after:  []*v1.Pod{testPod("a", "y"), testPod("b", "x")},
		},
		{
			desc:   "an unchanged pod sends nothing",
			before: []*v1.Pod{testPod("a", "x")},
			op:     UPDATE,
			pods:   []*v1.Pod{testPod("a", "x")},
			after:  []*v1.Pod{testPod("a", "x")},
		},
		{
			desc:   "a deletion timestamp is a delete",
			before: []*v1.Pod{testPod("a", "x"), testPod("b", "x")},
			op:     DELETE,
			pods:   []*v1.Pod{testPod("a", "x", func(p *v1.Pod) { p.DeletionTimestamp = &now })},
			want:   []string{"DELETE:a"},
			after:  []*v1.Pod{testPod("a", "x", func(p *v1.Pod) { p.DeletionTimestamp = &now }), testPod("b", "x")},
		},
		{
			desc:   "a status-only change is a reconcile",
			before: []*v1.Pod{testPod("a", "x")},
			op:     UPDATE,
			pods:   []*v1.Pod{testPod("a", "x", func(p *v1.Pod) { p.Status.Phase = v1.PodRunning })},
			want:   []string{"RECONCILE:a"},
			after:  []*v1.Pod{testPod("a", "x", func(p *v1.Pod) { p.Status.Phase = v1.PodRunning })},
		},
		{
			desc:   "remove forgets the pod and keeps the others",
			before: []*v1.Pod{testPod("a", "x"), testPod("b", "x")},
			op:     REMOVE,
			pods:   []*v1.Pod{testPod("a", "x")},
			want:   []string{"REMOVE:a"},
			after:  []*v1.Pod{testPod("b", "x")},
		},
		{
			desc:   "removing a pod the source does not hold sends nothing",
			before: []*v1.Pod{testPod("a", "x")},
			op:     REMOVE,
			pods:   []*v1.Pod{testPod("z", "x")},
			after:  []*v1.Pod{testPod("a", "x")},
		},
		{
			desc:   "several pods at once, in the kubelet's order",
			before: []*v1.Pod{testPod("a", "x")},
			op:     UPDATE,
			pods:   []*v1.Pod{testPod("b", "x"), testPod("a", "y"), testPod("c", "x")},
			want:   []string{"ADD:b,c", "UPDATE:a"},
			after:  []*v1.Pod{testPod("a", "y"), testPod("b", "x"), testPod("c", "x")},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			ctx := context.Background()
			c := NewPodConfig(FileSourceName)
			c.Set(ctx, FileSourceName, tc.before)
			drain(c)
			c.Merge(ctx, FileSourceName, tc.op, tc.pods)
			if got := drain(c); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("updates = %v, want %v", got, tc.want)
			}
			c.Set(ctx, FileSourceName, tc.after)
			if got := drain(c); len(got) != 0 {
				t.Errorf("a Set of the expected set after Merge sent %v, want nothing", got)
			}
		})
	}
}

// Merge keeps Set's bookkeeping: the config.source tag, the first-seen
// creation time, the caller's pod untouched. It is not a source's first
// report: only Set counts for SeenAllSources, as in the kubelet.
func TestPodConfigMergeBookkeeping(t *testing.T) {
	ctx := context.Background()
	c := NewPodConfig(APISourceName)
	in := testPod("a", "x")
	c.Merge(ctx, APISourceName, ADD, []*v1.Pod{in})
	if c.SeenAllSources() {
		t.Error("SeenAllSources true after a Merge alone")
	}
	u := <-c.Updates()
	if got := u.Pods[0].Annotations["kubernetes.io/config.source"]; got != APISourceName || u.Source != APISourceName {
		t.Errorf("config.source = %q, update source %q; want %q", got, u.Source, APISourceName)
	}
	if in.Annotations != nil {
		t.Errorf("Merge modified the caller's pod: %v", in.Annotations)
	}
	first := u.Pods[0].CreationTimestamp
	if first.IsZero() {
		t.Fatal("a new pod without creationTimestamp got none")
	}
	c.Merge(ctx, APISourceName, UPDATE, []*v1.Pod{testPod("a", "y")})
	if got := (<-c.Updates()).Pods[0].CreationTimestamp; !got.Equal(&first) {
		t.Errorf("creationTimestamp changed on update: %v, first %v", got, first)
	}
}

// Like Set, Merge must not wait for the sync loop, which itself finalizes
// deletions (a Merge of a REMOVE).
func TestMergeDoesNotWaitForReader(t *testing.T) {
	cfg := NewPodConfig(APISourceName)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 500 {
			cfg.Merge(context.Background(), APISourceName, ADD, []*v1.Pod{testPod(fmt.Sprint(i), "x")})
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Merge blocked with nobody reading Updates")
	}
}

func TestCoalesce(t *testing.T) {
	up := func(op Operation, src string, uids ...string) PodUpdate {
		u := PodUpdate{Op: op, Source: src}
		for _, uid := range uids {
			u.Pods = append(u.Pods, testPod(uid, "x"))
		}
		return u
	}
	for _, tc := range []struct {
		desc  string
		queue []PodUpdate
		want  string // the update handed over
		n     int
	}{
		{desc: "a lone update", queue: []PodUpdate{up(ADD, "api", "a")}, want: "ADD api a", n: 1},
		{desc: "adjacent adds of one source merge in order",
			queue: []PodUpdate{up(ADD, "api", "a"), up(ADD, "api", "b", "c"), up(ADD, "api", "d")}, want: "ADD api a,b,c,d", n: 3},
		{desc: "another op ends the batch",
			queue: []PodUpdate{up(ADD, "api", "a"), up(UPDATE, "api", "a"), up(ADD, "api", "b")}, want: "ADD api a", n: 1},
		{desc: "another source ends the batch",
			queue: []PodUpdate{up(ADD, "api", "a"), up(ADD, "api", "b"), up(ADD, "file", "c")}, want: "ADD api a,b", n: 2},
		{desc: "the same pod twice stays twice, in order",
			queue: []PodUpdate{up(UPDATE, "api", "a"), up(UPDATE, "api", "b"), up(UPDATE, "api", "a")}, want: "UPDATE api a,b,a", n: 3},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var before []int
			for _, q := range tc.queue {
				before = append(before, len(q.Pods))
			}
			u, n := coalesce(tc.queue)
			var uids []string
			for _, p := range u.Pods {
				uids = append(uids, string(p.UID))
			}
			if got := fmt.Sprintf("%s %s %s", u.Op, u.Source, strings.Join(uids, ",")); got != tc.want || n != tc.n {
				t.Errorf("coalesce = %q over %d updates, want %q over %d", got, n, tc.want, tc.n)
			}
			for i, q := range tc.queue {
				if len(q.Pods) != before[i] {
					t.Errorf("queued update %d changed from %d to %d pods", i, before[i], len(q.Pods))
				}
			}
		})
	}
}

// While the sync loop is busy, queued updates pile up and reach it merged,
// but in the order they were made.
func TestForwarderCoalescesWhileReaderIsBusy(t *testing.T) {
	ctx := context.Background()
	c := NewPodConfig(FileSourceName, APISourceName)
	// The forwarder takes this one and blocks handing it over, since
	// nobody reads yet; it is of another source, so nothing joins it.
	c.Set(ctx, FileSourceName, []*v1.Pod{testPod("f", "x")})
	for _, step := range []struct {
		op  Operation
		pod *v1.Pod
	}{
		{ADD, testPod("a", "x")}, {ADD, testPod("b", "x")}, {ADD, testPod("a", "y")},
		{ADD, testPod("c", "x")}, {ADD, testPod("d", "x")}, {REMOVE, testPod("b", "x")},
	} {
		c.Merge(ctx, APISourceName, step.op, []*v1.Pod{step.pod})
	}
	want := []string{"ADD:f", "ADD:a,b", "UPDATE:a", "ADD:c,d", "REMOVE:b"}
	if got := drain(c); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("updates = %v, want %v", got, want)
	}
}

// Applies of one pod racing each other must reach the mux in the order the
// API source recorded them: the last update the sync loop sees is the
// version the source holds.
func TestConcurrentApplySamePodKeepsOrder(t *testing.T) {
	a, _, cfg := newTestAPISource(t)
	ctx := context.Background()
	if _, err := a.Apply(ctx, []byte(podA), false); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			m := strings.Replace(podA, "1.36", fmt.Sprintf("1.%d", 100+i), 1)
			if _, err := a.Apply(ctx, []byte(m), false); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	var last string
	for _, u := range drainUpdates(cfg) {
		for _, p := range u.Pods {
			last = p.Spec.Containers[0].Image
		}
	}
	a.mu.Lock()
	want := a.pods["default/a"].Spec.Containers[0].Image
	a.mu.Unlock()
	if last != want {
		t.Errorf("the sync loop last saw image %q, the source holds %q", last, want)
	}
}

var errFull = errors.New("disk full")

// A failed store write releases the pod's name: the next change to it goes
// ahead instead of waiting forever.
func TestApplyAfterStoreFailure(t *testing.T) {
	a, st, cfg := newTestAPISource(t)
	ctx := context.Background()
	st.fail = errFull
	if _, err := a.Apply(ctx, []byte(podA), false); err == nil {
		t.Fatal("Apply succeeded although the store failed")
	}
	st.fail = nil
	done := make(chan error, 1)
	go func() {
		_, err := a.Apply(ctx, []byte(podA), false)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Apply after a failed Apply of the same pod never returned")
	}
	if got := drain(cfg); strings.Join(got, " ") != "ADD:"+string(a.pods["default/a"].UID) {
		t.Errorf("updates = %v, want one ADD of the pod", got)
	}
}

// Apply, Delete and Finalize publish only the pod they change.
func TestAPISourcePublishesOnlyChangedPods(t *testing.T) {
	a, _, cfg := newTestAPISource(t)
	ctx := context.Background()
	other := strings.Replace(podA, "name: a", "name: b", 1)
	ra, err := a.Apply(ctx, []byte(podA), false)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := a.Apply(ctx, []byte(other), false)
	if err != nil {
		t.Fatal(err)
	}
	uidA, uidB := string(ra[0].Pod.UID), string(rb[0].Pod.UID)
	if _, err := a.Apply(ctx, []byte(strings.Replace(podA, "1.36", "1.37", 1)), false); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	if _, err := a.Delete(ctx, "default", "b", &zero); err != nil {
		t.Fatal(err)
	}
	if err := a.Finalize(ctx, "default", "b", rb[0].Pod.UID); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range drainUpdates(cfg) {
		var uids []string
		for _, p := range u.Pods {
			uids = append(uids, string(p.UID))
		}
		got = append(got, u.Op.String()+":"+strings.Join(uids, ","))
	}
	// The first two ADDs may arrive merged, if the reader was slower.
	want1 := []string{"ADD:" + uidA, "ADD:" + uidB, "UPDATE:" + uidA, "DELETE:" + uidB, "REMOVE:" + uidB}
	want2 := append([]string{"ADD:" + uidA + "," + uidB}, want1[2:]...)
	if g := strings.Join(got, " "); g != strings.Join(want1, " ") && g != strings.Join(want2, " ") {
		t.Errorf("updates = %v, want %v", got, want1)
	}
}

// drainUpdates is drain returning the updates themselves.
func drainUpdates(c *PodConfig) []PodUpdate {
	var out []PodUpdate
	for {
		select {
		case u := <-c.Updates():
			out = append(out, u)
		case <-time.After(100 * time.Millisecond):
			return out
		}
	}
}
