package syncloop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/defaults"
	"github.com/splitlet/splitlet/services/sync/internal/kuberuntime"
	"github.com/splitlet/splitlet/services/sync/internal/podmanager"
	"github.com/splitlet/splitlet/services/sync/internal/source"
	"github.com/splitlet/splitlet/services/sync/internal/worker"
)

// admitCall is one Admit call as the fake admitter saw it.
type admitCall struct {
	pod    string
	active []string
}

// fakeAdmitter answers with decide and records every call.
type fakeAdmitter struct {
	mu     sync.Mutex
	calls  []admitCall
	decide func(pod *v1.Pod, active []*v1.Pod) (AdmitResult, error)
}

var _ Admitter = (*fakeAdmitter)(nil)

func (f *fakeAdmitter) Admit(_ context.Context, pod *v1.Pod, active []*v1.Pod) (AdmitResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := admitCall{pod: pod.Name}
	for _, p := range active {
		c.active = append(c.active, p.Name)
	}
	f.calls = append(f.calls, c)
	return f.decide(pod, active)
}

func (f *fakeAdmitter) setDecide(d func(pod *v1.Pod, active []*v1.Pod) (AdmitResult, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decide = d
}

func (f *fakeAdmitter) callLog() []admitCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]admitCall(nil), f.calls...)
}

func admitAll(*v1.Pod, []*v1.Pod) (AdmitResult, error) { return AdmitResult{Admit: true}, nil }

type admitHarness struct {
	k  *Kubelet
	pm *podmanager.Manager
	rt *fakeRuntime
	ad *fakeAdmitter
}

func newAdmitHarness(t testing.TB, policy FailurePolicy) *admitHarness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rt := newFakeRuntime()
	pm := podmanager.New()
	ad := &fakeAdmitter{decide: admitAll}
	k := New(Options{Admitter: ad, AdmissionFailurePolicy: policy, AdmitRetryInitial: 10 * time.Millisecond},
		source.NewPodConfig(), pm, rt, &fakeCRI{})
	k.workers = worker.New(ctx, k, time.Hour, 20*time.Millisecond, nil)
	return &admitHarness{k: k, pm: pm, rt: rt, ad: ad}
}

// testPod is a pod created at minute min of a fixed hour.
func testPod(name string, minute int) *v1.Pod {
	grace := int64(1)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 10, minute, 0, 0, time.UTC)),
			Annotations:       map[string]string{defaults.ConfigSourceAnnotationKey: "api"},
		},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{{Name: "c", Image: "i"}}},
	}
}

func (f *fakeRuntime) graceOf(uid types.UID) *int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.grace[uid]
}

func (h *admitHarness) status(t *testing.T, uid types.UID) v1.PodStatus {
	t.Helper()
	s, ok := h.pm.GetPodStatus(uid)
	if !ok {
		t.Fatalf("no status for %s", uid)
	}
	return s
}

func condition(s v1.PodStatus, ct v1.PodConditionType) *v1.PodCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == ct {
			return &s.Conditions[i]
		}
	}
	return nil
}

func TestHandlePodAdditionsAdmitsInCreationOrder(t *testing.T) {
	h := newAdmitHarness(t, FailurePolicyFail)
	ctx := context.Background()
	// Given newest first, admitted oldest first, each against those before.
	h.k.HandlePodAdditions(ctx, []*v1.Pod{testPod("c", 3), testPod("a", 1), testPod("b", 2)})
	calls := h.ad.callLog()
	want := []admitCall{{pod: "a"}, {pod: "b", active: []string{"a"}}, {pod: "c", active: []string{"a", "b"}}}
	if got, w := fmt.Sprint(calls), fmt.Sprint(want); got != w {
		t.Fatalf("Admit calls = %s, want %s", got, w)
	}
	for _, n := range []string{"a", "b", "c"} {
		if !h.k.workers.IsKnown(types.UID("uid-" + n)) {
			t.Errorf("pod %s admitted but has no worker", n)
		}
	}
}

func TestTerminalPodIsNotAdmittedAgain(t *testing.T) {
	h := newAdmitHarness(t, FailurePolicyFail)
	pod := testPod("done", 1)
	pod.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfmemory"}
	h.k.HandlePodAdditions(context.Background(), []*v1.Pod{pod})
	if calls := h.ad.callLog(); len(calls) != 0 {
		t.Errorf("Admit called %v for a terminal pod", calls)
	}
	waitFor(t, "terminal pod's worker finished", func() bool { return h.k.workers.IsPodKnownTerminated(pod.UID) })
	if s := h.status(t, pod.UID); s.Phase != v1.PodFailed {
		t.Errorf("phase = %s, want Failed kept", s.Phase)
	}
}

func TestAdmissionOutcomes(t *testing.T) {
	unavailable := fmt.Errorf("%w: connection refused", ErrAdmissionUnavailable)
	for _, tc := range []struct {
		desc       string
		policy     FailurePolicy
		decide     func(*v1.Pod, []*v1.Pod) (AdmitResult, error)
		wantWorker bool
		wantPhase  v1.PodPhase
		wantReason string
		wantMsg    string
		// wantScheduled is the PodScheduled condition's reason, "" for none.
		wantScheduled string
	}{
		{
			desc:   "rejected pod fails with the kubelet's rejectPod status",
			policy: FailurePolicyFail,
			decide: func(*v1.Pod, []*v1.Pod) (AdmitResult, error) {
				return AdmitResult{Reason: "OutOfmemory", Message: "Node didn't have enough resource: memory"}, nil
			},
			wantPhase: v1.PodFailed, wantReason: "OutOfmemory",
			wantMsg: "Pod was rejected: Node didn't have enough resource: memory",
		},
		{
			desc:      "unavailable admission, fail-closed: the pod waits",
			policy:    FailurePolicyFail,
			decide:    func(*v1.Pod, []*v1.Pod) (AdmitResult, error) { return AdmitResult{}, unavailable },
			wantPhase: v1.PodPending, wantReason: ReasonAdmissionUnavailable,
			wantMsg:       messageAdmissionUnavailable + unavailable.Error(),
			wantScheduled: ReasonAdmissionUnavailable,
		},
		{
			desc:       "unavailable admission, policy Ignore: admitted",
			policy:     FailurePolicyIgnore,
			decide:     func(*v1.Pod, []*v1.Pod) (AdmitResult, error) { return AdmitResult{}, unavailable },
			wantWorker: true,
		},
		{
			desc:   "victims that never go away: rejected after the bounded rounds",
			policy: FailurePolicyFail,
			decide: func(*v1.Pod, []*v1.Pod) (AdmitResult, error) {
				return AdmitResult{Reason: "OutOfcpu", Message: "no cpu", Victims: []PodRef{{Namespace: "default", Name: "ghost"}},
					VictimReason: "Preempting", VictimMessage: "m"}, nil
			},
			wantPhase: v1.PodFailed, wantReason: "OutOfcpu", wantMsg: "Pod was rejected: no cpu",
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			h := newAdmitHarness(t, tc.policy)
			h.ad.setDecide(tc.decide)
			pod := testPod("p", 1)
			h.k.HandlePodAdditions(context.Background(), []*v1.Pod{pod})
			if got := h.k.workers.IsKnown(pod.UID); got != tc.wantWorker {
				t.Fatalf("worker started = %v, want %v", got, tc.wantWorker)
			}
			if tc.wantWorker {
				return
			}
			s := h.status(t, pod.UID)
			if s.Phase != tc.wantPhase || s.Reason != tc.wantReason || s.Message != tc.wantMsg {
				t.Errorf("status = %s/%s/%q, want %s/%s/%q", s.Phase, s.Reason, s.Message, tc.wantPhase, tc.wantReason, tc.wantMsg)
			}
			c := condition(s, v1.PodScheduled)
			switch {
			case tc.wantScheduled == "" && c != nil:
				t.Errorf("unexpected PodScheduled condition %+v", c)
			case tc.wantScheduled != "" && (c == nil || c.Status != v1.ConditionFalse || c.Reason != tc.wantScheduled):
				t.Errorf("PodScheduled = %+v, want False/%s", c, tc.wantScheduled)
			}
			if killed, _ := h.rt.state(pod.UID); killed {
				t.Error("the runtime was asked about a pod that never started")
			}
		})
	}
}

func TestPendingAdmissionRetriesAndStarts(t *testing.T) {
	h := newAdmitHarness(t, FailurePolicyFail)
	h.ad.setDecide(func(*v1.Pod, []*v1.Pod) (AdmitResult, error) {
		return AdmitResult{}, fmt.Errorf("%w: down", ErrAdmissionUnavailable)
	})
	ctx := context.Background()
	pod := testPod("p", 1)
	h.k.HandlePodAdditions(ctx, []*v1.Pod{pod})
	// A retry is armed (AdmitRetryInitial is 10 ms).
	select {
	case <-h.k.admitRetry:
	case <-time.After(5 * time.Second):
		t.Fatal("no admission retry was scheduled")
	}
	h.k.retryPendingAdmissions(ctx) // still down: stays pending, re-armed
	if h.k.workers.IsKnown(pod.UID) || !h.k.isPendingAdmission(pod.UID) {
		t.Fatal("pod started while admission was down")
	}
	h.ad.setDecide(admitAll)
	<-h.k.admitRetry
	h.k.retryPendingAdmissions(ctx)
	if !h.k.workers.IsKnown(pod.UID) || h.k.isPendingAdmission(pod.UID) {
		t.Fatal("pod not started once admission came back")
	}
	s := h.status(t, pod.UID)
	if s.Reason == ReasonAdmissionUnavailable || condition(s, v1.PodScheduled) != nil && condition(s, v1.PodScheduled).Reason == ReasonAdmissionUnavailable {
		t.Errorf("the waiting status outlived the admission: %+v", s)
	}
}

func TestUnavailableAdmissionKeepsPodsAlreadyRunning(t *testing.T) {
	h := newAdmitHarness(t, FailurePolicyFail)
	pod := testPod("running", 1)
	h.rt.pods[pod.UID] = &kuberuntime.RunningPod{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, Managed: true}
	h.ad.setDecide(func(*v1.Pod, []*v1.Pod) (AdmitResult, error) { return AdmitResult{}, ErrAdmissionUnavailable })
	h.k.HandlePodAdditions(context.Background(), []*v1.Pod{pod})
	if !h.k.workers.IsKnown(pod.UID) || h.k.isPendingAdmission(pod.UID) {
		t.Error("a pod the runtime already runs was parked when admission was down after a restart")
	}
}

func TestPendingPodIsNotActiveAndDeletesAtOnce(t *testing.T) {
	h := newAdmitHarness(t, FailurePolicyFail)
	ctx := context.Background()
	waiting := testPod("waiting", 1)
	h.ad.setDecide(func(*v1.Pod, []*v1.Pod) (AdmitResult, error) { return AdmitResult{}, ErrAdmissionUnavailable })
	h.k.HandlePodAdditions(ctx, []*v1.Pod{waiting})
	h.ad.setDecide(admitAll)
	h.k.HandlePodAdditions(ctx, []*v1.Pod{testPod("next", 2)})
	calls := h.ad.callLog()
	if last := calls[len(calls)-1]; last.pod != "next" || len(last.active) != 0 {
		t.Errorf("last Admit call = %+v, want next with no active pods", last)
	}
	deleted := waiting.DeepCopy()
	now := metav1.Now()
	deleted.DeletionTimestamp = &now
	h.k.HandlePodUpdates(ctx, []*v1.Pod{deleted})
	if h.k.isPendingAdmission(waiting.UID) || h.k.workers.IsKnown(waiting.UID) {
		t.Error("a deleted pending pod is still pending or got a worker")
	}
}

func TestPreemptionKillsVictimsThenAdmits(t *testing.T) {
	h := newAdmitHarness(t, FailurePolicyFail)
	ctx := context.Background()
	victim, critical := testPod("besteffort", 1), testPod("critical", 2)
	h.k.HandlePodAdditions(ctx, []*v1.Pod{victim})
	h.ad.setDecide(func(pod *v1.Pod, active []*v1.Pod) (AdmitResult, error) {
		for _, p := range active {
			if p.UID == victim.UID {
				return AdmitResult{Reason: "OutOfmemory", Message: "m",
					Victims:      []PodRef{{Namespace: "default", Name: victim.Name, UID: victim.UID}},
					VictimReason: "Preempting", VictimMessage: "Preempted in order to admit critical pod"}, nil
			}
		}
		return AdmitResult{Admit: true}, nil
	})
	h.k.HandlePodAdditions(ctx, []*v1.Pod{critical})

	if killed, _ := h.rt.state(victim.UID); !killed || !h.k.workers.IsPodKnownTerminated(victim.UID) {
		t.Fatalf("victim killed %v, terminated %v; want both before the critical pod is admitted",
			killed, h.k.workers.IsPodKnownTerminated(victim.UID))
	}
	if g := h.rt.graceOf(victim.UID); g == nil || *g != 1 {
		t.Errorf("victim killed with grace %v, want its own (1)", g)
	}
	if !h.k.workers.IsKnown(critical.UID) {
		t.Fatal("critical pod not admitted after preemption")
	}
	calls := h.ad.callLog()
	if last := calls[len(calls)-1]; last.pod != "critical" || len(last.active) != 0 {
		t.Errorf("second Admit call = %+v, want critical without the victim", last)
	}
	waitFor(t, "victim status final", func() bool {
		s, _ := h.pm.GetPodStatus(victim.UID)
		return s.Phase == v1.PodFailed && s.Reason == "Preempting"
	})
	s := h.status(t, victim.UID)
	if s.Message != "Preempted in order to admit critical pod" {
		t.Errorf("victim message = %q", s.Message)
	}
	c := condition(s, v1.DisruptionTarget)
	if c == nil || c.Status != v1.ConditionTrue || c.Reason != v1.PodReasonTerminationByKubelet || c.Message != messagePreemptedCondition {
		t.Errorf("victim DisruptionTarget = %+v", c)
	}
}

func TestEvictPod(t *testing.T) {
	h := newAdmitHarness(t, FailurePolicyFail)
	ctx := context.Background()
	pod := testPod("p", 1)
	static := testPod("static", 2)
	static.Annotations[defaults.ConfigSourceAnnotationKey] = "file"
	h.k.HandlePodAdditions(ctx, []*v1.Pod{pod, static})
	grace := int64(0)
	for _, tc := range []struct {
		desc    string
		ref     PodRef
		wantErr error
	}{
		{desc: "unknown pod", ref: PodRef{Namespace: "default", Name: "nope"}, wantErr: errdefs.ErrNotFound},
		{desc: "static pods are critical", ref: PodRef{Namespace: "default", Name: "static", UID: static.UID}, wantErr: errdefs.ErrFailedPrecondition},
		{desc: "by name, without UID", ref: PodRef{Namespace: "default", Name: "p"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := h.k.EvictPod(ctx, tc.ref, ReasonEvicted, "The node was low on resource: memory.", &grace)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("EvictPod = %v, want %v", err, tc.wantErr)
			}
		})
	}
	waitFor(t, "evicted pod terminated", func() bool { return h.k.workers.IsPodKnownTerminated(pod.UID) })
	if g := h.rt.graceOf(pod.UID); g == nil || *g != 0 {
		t.Errorf("evicted with grace %v, want the override 0", g)
	}
	waitFor(t, "evicted status", func() bool {
		s, _ := h.pm.GetPodStatus(pod.UID)
		return s.Phase == v1.PodFailed && s.Reason == ReasonEvicted && s.Message == "The node was low on resource: memory."
	})
	c := condition(h.status(t, pod.UID), v1.DisruptionTarget)
	if c == nil || c.Reason != v1.PodReasonTerminationByKubelet || c.Message != "The node was low on resource: memory." {
		t.Errorf("DisruptionTarget = %+v", c)
	}
	if killed, _ := h.rt.state(static.UID); killed {
		t.Error("a static pod was evicted")
	}
}

// DeleteAllUnusedContainers empties the pods whose worker terminated them
// (an evicted pod, still in its source) and no other.
func TestDeleteAllUnusedContainersEmptiesTerminatedPods(t *testing.T) {
	h := newAdmitHarness(t, FailurePolicyFail)
	ctx := context.Background()
	evicted, running := testPod("evicted", 1), testPod("running", 2)
	h.k.HandlePodAdditions(ctx, []*v1.Pod{evicted, running})
	grace := int64(0)
	if err := h.k.EvictPod(ctx, PodRef{Namespace: "default", Name: "evicted"}, ReasonEvicted, "low on disk", &grace); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "evicted pod terminated", func() bool { return h.k.workers.IsPodKnownTerminated(evicted.UID) })
	if err := h.k.DeleteAllUnusedContainers(ctx); err != nil {
		t.Fatal(err)
	}
	h.rt.mu.Lock()
	terminated := h.rt.terminated
	h.rt.mu.Unlock()
	if terminated == nil || !terminated(evicted.UID) || terminated(running.UID) {
		t.Errorf("DeleteAllUnusedContainers empties the wrong pods: evicted %v, running %v",
			terminated != nil && terminated(evicted.UID), terminated != nil && terminated(running.UID))
	}
}

// fakeBatchAdmitter is a BatchAdmitter over a fakeAdmitter's decide: a
// batch answers what consecutive Admit calls would (admitted pods join
// active, stop after victims), at most perCall pods a call (0: all), or
// fails with err. Its single Admit is the fakeAdmitter's.
type fakeBatchAdmitter struct {
	*fakeAdmitter
	perCall int
	err     error
	batches []admitCall // pod is the batch's pod names joined by ","
}

var _ BatchAdmitter = (*fakeBatchAdmitter)(nil)

func (f *fakeBatchAdmitter) AdmitPods(_ context.Context, pods []*v1.Pod, active []*v1.Pod) ([]AdmitResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var c admitCall
	for i, p := range pods {
		if i > 0 {
			c.pod += ","
		}
		c.pod += p.Name
	}
	for _, p := range active {
		c.active = append(c.active, p.Name)
	}
	f.batches = append(f.batches, c)
	if f.err != nil {
		return nil, f.err
	}
	if f.perCall > 0 && len(pods) > f.perCall {
		pods = pods[:f.perCall]
	}
	active = slices.Clone(active)
	var out []AdmitResult
	for _, p := range pods {
		res, err := f.decide(p, active)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
		if len(res.Victims) > 0 {
			break
		}
		if res.Admit {
			active = append(active, p)
		}
	}
	return out, nil
}

func (f *fakeBatchAdmitter) batchLog() []admitCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

func newBatchAdmitHarness(t *testing.T, policy FailurePolicy) (*admitHarness, *fakeBatchAdmitter) {
	t.Helper()
	h := newAdmitHarness(t, policy)
	b := &fakeBatchAdmitter{fakeAdmitter: h.ad}
	h.k.opts.Admitter = b
	return h, b
}

// heldSyncer is a Kubelet whose pod syncs wait until the test ends.
type heldSyncer struct{ *Kubelet }

func (h heldSyncer) SyncPod(ctx context.Context, _ worker.UpdateType, _ *v1.Pod) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}

func TestHandlePodAdditionsAdmitsABatchInOneCall(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		perCall int
		// existing is admitted first, on its own.
		existing    []*v1.Pod
		pods        []*v1.Pod
		wantBatches []admitCall
		wantSingles []admitCall
	}{
		{
			desc:        "one call in creation order",
			existing:    []*v1.Pod{testPod("old", 0)},
			pods:        []*v1.Pod{testPod("c", 3), testPod("a", 1), testPod("b", 2)},
			wantBatches: []admitCall{{pod: "a,b,c", active: []string{"old"}}},
			wantSingles: []admitCall{{pod: "old"}},
		},
		{
			desc:    "an admitter answering a prefix is asked again, the admitted pods now active",
			perCall: 2,
			pods:    []*v1.Pod{testPod("a", 1), testPod("b", 2), testPod("c", 3), testPod("d", 4), testPod("e", 5)},
			wantBatches: []admitCall{
				{pod: "a,b,c,d,e"}, {pod: "c,d,e", active: []string{"a", "b"}},
			},
			// The last pod alone needs no batch.
			wantSingles: []admitCall{{pod: "e", active: []string{"a", "b", "c", "d"}}},
		},
		{
			desc: "a pod that needs no admission splits the batch, decided in between as one by one",
			pods: []*v1.Pod{testPod("a", 1), testPod("b", 2), func() *v1.Pod {
				p := testPod("done", 3)
				p.Status.Phase = v1.PodSucceeded
				return p
			}(), testPod("c", 4), testPod("d", 5)},
			// "done" has a worker (confirming it finished) before c and
			// d are judged, and no status of its own yet, so it counts as
			// active, exactly as with one Admit per pod.
			wantBatches: []admitCall{{pod: "a,b"}, {pod: "c,d", active: []string{"a", "b", "done"}}},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			h, b := newBatchAdmitHarness(t, FailurePolicyFail)
			// Workers that never get to sync: which pods count as active
			// must not depend on how far "done"'s worker got (finished,
			// it would drop out of the active set one run in twenty).
			h.k.workers = worker.New(t.Context(), heldSyncer{h.k}, time.Hour, 20*time.Millisecond, nil)
			b.perCall = tc.perCall
			ctx := context.Background()
			for _, p := range tc.existing {
				h.k.HandlePodAdditions(ctx, []*v1.Pod{p})
			}
			h.k.HandlePodAdditions(ctx, tc.pods)
			if got, want := fmt.Sprint(b.batchLog()), fmt.Sprint(tc.wantBatches); got != want {
				t.Errorf("AdmitPods calls = %s, want %s", got, want)
			}
			if got, want := fmt.Sprint(h.ad.callLog()), fmt.Sprint(tc.wantSingles); got != want {
				t.Errorf("Admit calls = %s, want %s", got, want)
			}
			for _, p := range append(tc.existing, tc.pods...) {
				if !h.k.workers.IsKnown(p.UID) {
					t.Errorf("pod %s has no worker", p.Name)
				}
			}
		})
	}
}

func TestBatchRejectionInTheMiddle(t *testing.T) {
	h, b := newBatchAdmitHarness(t, FailurePolicyFail)
	// Room for two pods: the third is refused, the fourth too.
	h.ad.setDecide(func(pod *v1.Pod, active []*v1.Pod) (AdmitResult, error) {
		if len(active) >= 2 {
			return AdmitResult{Reason: "OutOfpods", Message: "Node didn't have enough resource: pods"}, nil
		}
		return AdmitResult{Admit: true}, nil
	})
	pods := []*v1.Pod{testPod("a", 1), testPod("b", 2), testPod("c", 3), testPod("d", 4)}
	h.k.HandlePodAdditions(context.Background(), pods)
	if n := len(b.batchLog()); n != 1 {
		t.Errorf("%d AdmitPods calls, want 1", n)
	}
	for _, p := range pods[:2] {
		if !h.k.workers.IsKnown(p.UID) {
			t.Errorf("admitted pod %s has no worker", p.Name)
		}
	}
	for _, p := range pods[2:] {
		if h.k.workers.IsKnown(p.UID) {
			t.Errorf("rejected pod %s has a worker", p.Name)
		}
		s := h.status(t, p.UID)
		if s.Phase != v1.PodFailed || s.Reason != "OutOfpods" || s.Message != "Pod was rejected: Node didn't have enough resource: pods" {
			t.Errorf("pod %s status %s/%s/%q, want the kubelet's rejectPod status", p.Name, s.Phase, s.Reason, s.Message)
		}
	}
}

func TestBatchPreemptionInTheMiddle(t *testing.T) {
	h, b := newBatchAdmitHarness(t, FailurePolicyFail)
	ctx := context.Background()
	victim := testPod("besteffort", 0)
	h.k.HandlePodAdditions(ctx, []*v1.Pod{victim})
	h.ad.setDecide(func(pod *v1.Pod, active []*v1.Pod) (AdmitResult, error) {
		if pod.Name != "critical" {
			return AdmitResult{Admit: true}, nil
		}
		for _, p := range active {
			if p.UID == victim.UID {
				return AdmitResult{Reason: "OutOfmemory", Message: "m",
					Victims:      []PodRef{{Namespace: "default", Name: victim.Name, UID: victim.UID}},
					VictimReason: "Preempting", VictimMessage: "Preempted in order to admit critical pod"}, nil
			}
		}
		return AdmitResult{Admit: true}, nil
	})
	pods := []*v1.Pod{testPod("a", 1), testPod("critical", 2), testPod("c", 3), testPod("d", 4)}
	h.k.HandlePodAdditions(ctx, pods)

	// The batch stops at the critical pod; once the victim is gone the
	// critical pod is asked about alone, then the rest go in a new batch
	// that sees it active and the victim not.
	wantBatches := []admitCall{
		{pod: "a,critical,c,d", active: []string{"besteffort"}},
		{pod: "c,d", active: []string{"a", "critical"}},
	}
	if got, want := fmt.Sprint(b.batchLog()), fmt.Sprint(wantBatches); got != want {
		t.Errorf("AdmitPods calls = %s, want %s", got, want)
	}
	wantSingles := []admitCall{{pod: "besteffort"}, {pod: "critical", active: []string{"a"}}}
	if got, want := fmt.Sprint(h.ad.callLog()), fmt.Sprint(wantSingles); got != want {
		t.Errorf("Admit calls = %s, want %s", got, want)
	}
	if killed, _ := h.rt.state(victim.UID); !killed || !h.k.workers.IsPodKnownTerminated(victim.UID) {
		t.Errorf("victim killed %v, terminated %v; want both", killed, h.k.workers.IsPodKnownTerminated(victim.UID))
	}
	for _, p := range pods {
		if !h.k.workers.IsKnown(p.UID) {
			t.Errorf("pod %s has no worker", p.Name)
		}
	}
	waitFor(t, "victim status final", func() bool {
		s, _ := h.pm.GetPodStatus(victim.UID)
		return s.Phase == v1.PodFailed && s.Reason == "Preempting"
	})
}

func TestBatchAdmissionUnavailable(t *testing.T) {
	unavailable := fmt.Errorf("%w: connection refused", ErrAdmissionUnavailable)
	for _, tc := range []struct {
		desc   string
		policy FailurePolicy
		// running is already in the runtime (sync restarted).
		running     string
		wantStarted []string
		wantPending []string
	}{
		{desc: "fail-closed: every pod waits", policy: FailurePolicyFail, wantPending: []string{"a", "b", "c"}},
		{desc: "policy Ignore: every pod starts", policy: FailurePolicyIgnore, wantStarted: []string{"a", "b", "c"}},
		{
			desc: "fail-closed, one pod already running: it stays, the others wait", policy: FailurePolicyFail, running: "b",
			wantStarted: []string{"b"}, wantPending: []string{"a", "c"},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			h, b := newBatchAdmitHarness(t, tc.policy)
			b.err = unavailable
			pods := []*v1.Pod{testPod("a", 1), testPod("b", 2), testPod("c", 3)}
			if tc.running != "" {
				uid := types.UID("uid-" + tc.running)
				h.rt.pods[uid] = &kuberuntime.RunningPod{UID: uid, Name: tc.running, Namespace: "default", Managed: true}
			}
			h.k.HandlePodAdditions(context.Background(), pods)
			if n, singles := len(b.batchLog()), h.ad.callLog(); n != 1 || len(singles) != 0 {
				t.Errorf("%d AdmitPods and %v Admit calls, want one batch and nothing more", n, singles)
			}
			for _, name := range tc.wantStarted {
				uid := types.UID("uid-" + name)
				if !h.k.workers.IsKnown(uid) || h.k.isPendingAdmission(uid) {
					t.Errorf("pod %s not started", name)
				}
			}
			for _, name := range tc.wantPending {
				uid := types.UID("uid-" + name)
				if h.k.workers.IsKnown(uid) || !h.k.isPendingAdmission(uid) {
					t.Errorf("pod %s not waiting for admission", name)
					continue
				}
				s := h.status(t, uid)
				if s.Phase != v1.PodPending || s.Reason != ReasonAdmissionUnavailable || s.Message != messageAdmissionUnavailable+unavailable.Error() {
					t.Errorf("pod %s status %s/%s/%q", name, s.Phase, s.Reason, s.Message)
				}
			}
		})
	}
}

// TestGetActivePods: the pod-resources API's pods are the admitted ones
// still running; a pod whose worker finished in a terminal phase, and one
// nobody admitted, are left out, by List and by Get alike.
func TestGetActivePods(t *testing.T) {
	h := newAdmitHarness(t, FailurePolicyFail)
	ctx := context.Background()
	done := testPod("done", 1)
	done.Status = v1.PodStatus{Phase: v1.PodSucceeded}
	h.k.HandlePodAdditions(ctx, []*v1.Pod{testPod("web", 2), done})
	waitFor(t, "terminal pod's worker finished", func() bool { return h.k.workers.IsPodKnownTerminated(done.UID) })
	h.ad.setDecide(func(*v1.Pod, []*v1.Pod) (AdmitResult, error) { return AdmitResult{}, ErrAdmissionUnavailable })
	h.k.HandlePodAdditions(ctx, []*v1.Pod{testPod("waiting", 3)})

	var names []string
	for _, p := range h.k.GetActivePods() {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"web"}) {
		t.Errorf("GetActivePods = %v, want [web]", names)
	}
	// The batch (activePods) and the one-pod rule (isPodInactive) agree.
	for _, p := range h.pm.GetPods() {
		if listed, inactive := slices.Contains(names, p.Name), h.k.isPodInactive(p); listed == inactive {
			t.Errorf("pod %s: listed active %v, isPodInactive %v", p.Name, listed, inactive)
		}
	}
	for _, tc := range []struct {
		desc, name string
		want       bool
	}{
		{desc: "running pod", name: "web", want: true},
		{desc: "terminated pod", name: "done"},
		{desc: "pod waiting for admission", name: "waiting"},
		{desc: "unknown pod", name: "nope"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			p, ok := h.k.GetActivePodByName("default", tc.name)
			if ok != tc.want || (ok && p.Name != tc.name) {
				t.Errorf("GetActivePodByName(default, %s) = %v, %v; want found %v", tc.name, p, ok, tc.want)
			}
		})
	}
}

// BenchmarkActivePods is what each admission (each AdmitPods batch) pays
// to find the active pods of a node holding n admitted, running pods: the
// kubelet's filterOutInactivePods walks them all.
func BenchmarkActivePods(b *testing.B) {
	for _, n := range []int{110, 5000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			h := newAdmitHarness(b, FailurePolicyFail)
			pods := make([]*v1.Pod, n)
			for i := range pods {
				pods[i] = testPod(fmt.Sprintf("p%05d", i), i%60)
			}
			h.k.HandlePodAdditions(context.Background(), pods)
			if got := len(h.k.activePods(nil, nil)); got != n {
				b.Fatalf("%d active pods, want %d", got, n)
			}
			b.ReportAllocs()
			for b.Loop() {
				h.k.activePods(nil, nil)
			}
		})
	}
}
