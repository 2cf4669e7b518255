package preemption

import (
	"context"
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/splitlet/splitlet/services/admission/lifecycle"
	"github.com/splitlet/splitlet/services/admission/predicate"
)

// pod builds a pod whose single container requests cpu and memory and, when
// guaranteed, has equal limits. Empty cpu and memory make it BestEffort.
func pod(name, cpu, mem string, guaranteed bool) *v1.Pod {
	req := v1.ResourceList{}
	if cpu != "" {
		req[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[v1.ResourceMemory] = resource.MustParse(mem)
	}
	c := v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}
	if guaranteed {
		c.Resources.Limits = req.DeepCopy()
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1.PodSpec{Containers: []v1.Container{c}}}
}

func static(p *v1.Pod) *v1.Pod {
	p.Annotations = map[string]string{lifecycle.ConfigSourceAnnotationKey: "file"}
	return p
}

func priority(p *v1.Pod, prio int32) *v1.Pod {
	p.Spec.Priority = &prio
	return p
}

func short(name v1.ResourceName, requested, used, capacity int64) *lifecycle.InsufficientResourceError {
	return &lifecycle.InsufficientResourceError{ResourceName: name, Requested: requested, Used: used, Capacity: capacity}
}

func names(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func TestHandleAdmissionFailure(t *testing.T) {
	nodeNameFailure := &lifecycle.PredicateFailureError{PredicateName: "NodeName", PredicateDesc: "node(s) didn't match the requested node name"}
	tests := []struct {
		desc          string
		pod           *v1.Pod
		others        []*v1.Pod
		reasons       []lifecycle.PredicateFailureReason
		wantRemaining []string // GetReason of what is left
		wantVictims   []string // in order
		wantErr       string
	}{
		{
			desc: "non-critical pod keeps its failures", pod: pod("p", "1", "", false),
			others:        []*v1.Pod{pod("be", "", "", false)},
			reasons:       []lifecycle.PredicateFailureReason{short(v1.ResourceCPU, 1000, 500, 1000)},
			wantRemaining: []string{"Insufficient cpu"},
		},
		{
			desc: "critical pod with a non-resource failure keeps only that", pod: static(pod("p", "1", "", false)),
			others:        []*v1.Pod{pod("be", "", "", false)},
			reasons:       []lifecycle.PredicateFailureReason{short(v1.ResourceCPU, 1000, 500, 1000), nodeNameFailure},
			wantRemaining: []string{"node(s) didn't match the requested node name"},
		},
		{
			desc: "pods shortfall takes a BestEffort pod first", pod: static(pod("p", "", "", false)),
			others:      []*v1.Pod{pod("g", "1", "1Gi", true), pod("bu", "100m", "", false), pod("be", "", "", false)},
			reasons:     []lifecycle.PredicateFailureReason{short(v1.ResourcePods, 1, 3, 3)},
			wantVictims: []string{"be"},
		},
		{
			desc: "cpu shortfall takes Burstable before Guaranteed", pod: priority(pod("p", "1", "", false), 2000000000),
			others:      []*v1.Pod{pod("g", "1", "1Gi", true), pod("bu", "600m", "", false), pod("be", "", "", false)},
			reasons:     []lifecycle.PredicateFailureReason{short(v1.ResourceCPU, 1000, 1600, 2100)},
			wantVictims: []string{"bu"},
		},
		{
			desc: "fewest victims: one big pod beats several small ones", pod: static(pod("p", "1", "", false)),
			others: []*v1.Pod{pod("s1", "300m", "", false), pod("s2", "300m", "", false),
				pod("s3", "400m", "", false), pod("big", "1", "", false)},
			reasons:     []lifecycle.PredicateFailureReason{short(v1.ResourceCPU, 1000, 2000, 2000)},
			wantVictims: []string{"big"},
		},
		{
			desc: "equal distance picks the smaller memory request", pod: static(pod("p", "500m", "", false)),
			others:      []*v1.Pod{pod("a", "600m", "200Mi", false), pod("b", "600m", "100Mi", false)},
			reasons:     []lifecycle.PredicateFailureReason{short(v1.ResourceCPU, 500, 1200, 1200)},
			wantVictims: []string{"b"},
		},
		{
			desc: "equal memory picks the smaller cpu request", pod: static(pod("p", "500m", "", false)),
			others:      []*v1.Pod{pod("a", "700m", "100Mi", false), pod("b", "600m", "100Mi", false)},
			reasons:     []lifecycle.PredicateFailureReason{short(v1.ResourceCPU, 500, 1300, 1300)},
			wantVictims: []string{"b"},
		},
		{
			desc: "Guaranteed pods only for what the others cannot free", pod: static(pod("p", "1500m", "", false)),
			others: []*v1.Pod{pod("bu", "1", "", false), pod("g1", "1", "1Gi", true),
				pod("g2", "500m", "1Gi", true)},
			reasons:     []lifecycle.PredicateFailureReason{short(v1.ResourceCPU, 1500, 2500, 2500)},
			wantVictims: []string{"bu", "g2"},
		},
		{
			desc: "several resources: the pod covering both wins", pod: static(pod("p", "500m", "500Mi", false)),
			others: []*v1.Pod{pod("cpu-only", "500m", "", false), pod("mem-only", "", "500Mi", false),
				pod("both", "500m", "500Mi", false)},
			reasons: []lifecycle.PredicateFailureReason{
				short(v1.ResourceCPU, 500, 1000, 1000), short(v1.ResourceMemory, 500<<20, 1000<<20, 1000<<20)},
			wantVictims: []string{"both"},
		},
		{
			desc: "cannot free enough", pod: static(pod("p", "5", "", false)),
			others:  []*v1.Pod{pod("bu", "1", "", false)},
			reasons: []lifecycle.PredicateFailureReason{short(v1.ResourceCPU, 5000, 1000, 1000)},
			wantErr: "preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 4000), ]",
		},
		{
			desc: "other critical pods are never taken by an equal critical pod", pod: static(pod("p", "1", "", false)),
			others:  []*v1.Pod{static(pod("crit", "2", "", false)), priority(pod("sys", "2", "", false), 2000000000)},
			reasons: []lifecycle.PredicateFailureReason{short(v1.ResourceCPU, 1000, 4000, 4000)},
			wantErr: "preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 1000), ]",
		},
		{
			// The kubelet's Preemptable lets a strictly higher priority win
			// even over a critical pod.
			desc: "system-node-critical may take a system-cluster-critical pod", pod: priority(pod("p", "1", "", false), 2000001000),
			others:      []*v1.Pod{priority(pod("sys", "2", "", false), 2000000000)},
			reasons:     []lifecycle.PredicateFailureReason{short(v1.ResourceCPU, 1000, 2000, 2000)},
			wantVictims: []string{"sys"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			h := &CriticalPodAdmissionHandler{}
			remaining, victims, err := h.HandleAdmissionFailure(context.Background(),
				&lifecycle.PodAdmitAttributes{Pod: tc.pod, OtherPods: tc.others}, tc.reasons)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, ErrNoVictims) {
					t.Fatalf("err = %v, want %q wrapping ErrNoVictims", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			var gotRemaining []string
			for _, r := range remaining {
				gotRemaining = append(gotRemaining, r.GetReason())
			}
			if !slices.Equal(gotRemaining, tc.wantRemaining) {
				t.Errorf("remaining = %v, want %v", gotRemaining, tc.wantRemaining)
			}
			if got := names(victims); !slices.Equal(got, tc.wantVictims) && !(len(got) == 0 && len(tc.wantVictims) == 0) {
				t.Errorf("victims = %v, want %v", got, tc.wantVictims)
			}
		})
	}
}

// TestPreemptThroughPredicate runs the whole step: the predicate handler
// fails a static pod for cpu, preemption names the victim, and admission
// without the victim admits.
func TestPreemptThroughPredicate(t *testing.T) {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("2"), v1.ResourcePods: resource.MustParse("10"),
		}},
	}
	h := predicate.NewHandler(predicate.Options{
		GetNode:        func(context.Context) (*v1.Node, error) { return node, nil },
		FailureHandler: &CriticalPodAdmissionHandler{},
		OS:             "linux",
	})
	crit := static(pod("crit", "1", "", false))
	keep, drop := pod("keep", "500m", "1Gi", true), pod("drop", "1", "", false)

	tests := []struct {
		desc        string
		others      []*v1.Pod
		wantAdmit   bool
		wantReason  string
		wantMessage string
		wantVictims []string
	}{
		{
			desc: "shortfall names the victim", others: []*v1.Pod{keep, drop},
			wantReason: "OutOfcpu", wantVictims: []string{"drop"},
			wantMessage: "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000",
		},
		{desc: "without the victim the pod is admitted", others: []*v1.Pod{keep}, wantAdmit: true},
		{
			desc: "nothing preemptable frees enough", others: []*v1.Pod{static(pod("other-static", "1500m", "", false))},
			wantReason: "UnexpectedAdmissionError",
			wantMessage: "Unexpected error while attempting to recover from admission failure: preemption: error finding a set " +
				"of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 500), ]",
		},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			got := h.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: crit, OtherPods: tc.others})
			if got.Admit != tc.wantAdmit || got.Reason != tc.wantReason {
				t.Fatalf("got %+v, want admit=%v reason=%q", got, tc.wantAdmit, tc.wantReason)
			}
			if tc.wantMessage != "" && got.Message != tc.wantMessage {
				t.Errorf("Message = %q, want %q", got.Message, tc.wantMessage)
			}
			if v := names(got.Victims); !slices.Equal(v, tc.wantVictims) && !(len(v) == 0 && len(tc.wantVictims) == 0) {
				t.Errorf("victims = %v, want %v", v, tc.wantVictims)
			}
		})
	}
}
