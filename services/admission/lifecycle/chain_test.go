package lifecycle

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// fakeHandler returns a fixed result and counts its calls.
type fakeHandler struct {
	result PodAdmitResult
	calls  int
}

var _ PodAdmitHandler = (*fakeHandler)(nil)

func (f *fakeHandler) Admit(context.Context, *PodAdmitAttributes) PodAdmitResult {
	f.calls++
	return f.result
}

func TestChain(t *testing.T) {
	admit := PodAdmitResult{Admit: true}
	reject := func(reason string) PodAdmitResult {
		return PodAdmitResult{Reason: reason, Message: reason + " message"}
	}
	tests := []struct {
		desc       string
		results    []PodAdmitResult
		wantAdmit  bool
		wantReason string
		wantCalls  []int
	}{
		{desc: "empty chain admits", wantAdmit: true},
		{desc: "all admit", results: []PodAdmitResult{admit, admit}, wantAdmit: true, wantCalls: []int{1, 1}},
		{
			desc: "first rejection wins and stops the chain", results: []PodAdmitResult{admit, reject("A"), reject("B")},
			wantReason: "A", wantCalls: []int{1, 1, 0},
		},
		{desc: "rejection by the last handler", results: []PodAdmitResult{admit, reject("B")}, wantReason: "B", wantCalls: []int{1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			var chain Chain
			var fakes []*fakeHandler
			for _, r := range tc.results {
				f := &fakeHandler{result: r}
				fakes = append(fakes, f)
				chain = append(chain, f)
			}
			got := chain.Admit(context.Background(), &PodAdmitAttributes{Pod: &v1.Pod{}})
			if got.Admit != tc.wantAdmit || got.Reason != tc.wantReason {
				t.Fatalf("got %+v, want admit=%v reason=%q", got, tc.wantAdmit, tc.wantReason)
			}
			if !tc.wantAdmit && got.Message != tc.wantReason+" message" {
				t.Errorf("Message = %q, want the rejecting handler's", got.Message)
			}
			for i, f := range fakes {
				if f.calls != tc.wantCalls[i] {
					t.Errorf("handler %d called %d times, want %d", i, f.calls, tc.wantCalls[i])
				}
			}
		})
	}
}

type oddReason struct{}

func (oddReason) GetReason() string { return "odd" }

func TestResultFromReasons(t *testing.T) {
	tests := []struct {
		desc        string
		reasons     []PredicateFailureReason
		wantReason  string
		wantMessage string
	}{
		{
			desc: "no reasons", wantReason: "UnknownReason",
			wantMessage: "GeneralPredicates failed due to unknown reason, which is unexpected.",
		},
		{
			desc:       "predicate failure uses the predicate name",
			reasons:    []PredicateFailureReason{&PredicateFailureError{PredicateName: "NodeName", PredicateDesc: "desc"}},
			wantReason: "NodeName", wantMessage: "Predicate NodeName failed: desc",
		},
		{desc: "cpu", reasons: []PredicateFailureReason{&InsufficientResourceError{ResourceName: v1.ResourceCPU, Requested: 2, Used: 1, Capacity: 2}},
			wantReason: "OutOfcpu", wantMessage: "Node didn't have enough resource: cpu, requested: 2, used: 1, capacity: 2"},
		{desc: "memory", reasons: []PredicateFailureReason{&InsufficientResourceError{ResourceName: v1.ResourceMemory}}, wantReason: "OutOfmemory"},
		{desc: "ephemeral-storage", reasons: []PredicateFailureReason{&InsufficientResourceError{ResourceName: v1.ResourceEphemeralStorage}}, wantReason: "OutOfephemeral-storage"},
		{desc: "pods", reasons: []PredicateFailureReason{&InsufficientResourceError{ResourceName: v1.ResourcePods}}, wantReason: "OutOfpods"},
		{desc: "extended", reasons: []PredicateFailureReason{&InsufficientResourceError{ResourceName: "example.com/gpu"}}, wantReason: "OutOfexample.com/gpu"},
		{
			desc: "only the first reason counts",
			reasons: []PredicateFailureReason{&InsufficientResourceError{ResourceName: v1.ResourceMemory},
				&PredicateFailureError{PredicateName: "NodeName"}},
			wantReason: "OutOfmemory",
		},
		{
			desc: "unknown reason type", reasons: []PredicateFailureReason{oddReason{}},
			wantReason: "UnexpectedPredicateFailureType", wantMessage: "GeneralPredicates failed due to {}, which is unexpected.",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got := ResultFromReasons(tc.reasons)
			if got.Admit || got.Reason != tc.wantReason {
				t.Fatalf("got %+v, want rejection %q", got, tc.wantReason)
			}
			if tc.wantMessage != "" && got.Message != tc.wantMessage {
				t.Errorf("Message = %q, want %q", got.Message, tc.wantMessage)
			}
		})
	}
}

func TestInsufficientAmount(t *testing.T) {
	e := &InsufficientResourceError{ResourceName: v1.ResourceCPU, Requested: 800, Used: 700, Capacity: 1000}
	if got := e.GetInsufficientAmount(); got != 500 {
		t.Fatalf("GetInsufficientAmount() = %d, want 500", got)
	}
}
