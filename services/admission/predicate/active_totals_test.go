package predicate

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/admission/lifecycle"
)

// countingInfos is an ActivePodInfoSource that summarises every pod it is
// asked for and counts them.
type countingInfos struct{ asked int }

func (c *countingInfos) ActivePodInfos(pods []*v1.Pod, infos []*ActivePodInfo) {
	c.asked += len(pods)
	for i, p := range pods {
		infos[i] = NewActivePodInfo(p)
	}
}

// TestActiveTotals follows the admissions of one AdmitPods call: beside a
// set grown in place, each looks up only the pods added since the last
// and answers as an admission without totals; any other slice (a new
// array, or the same one shorter) starts the totals afresh.
func TestActiveTotals(t *testing.T) {
	cpu := func(name string) *v1.Pod { return mkPod(name, requests("cpu", "400m")) }
	p1, p2, p3 := cpu("p1"), cpu("p2"), cpu("p3")
	grown := make([]*v1.Pod, 0, 3)
	source := &countingInfos{}
	h := NewHandler(Options{GetNode: staticNode(testNode()), OS: "linux", ActivePodInfos: source})
	plain := NewHandler(Options{GetNode: staticNode(testNode()), OS: "linux"})
	ctx := WithActiveTotals(context.Background(), &ActiveTotals{})
	for _, step := range []struct {
		desc      string
		pod       *v1.Pod
		others    func() []*v1.Pod
		wantAsked int
		want      string // the rejection reason, "" for admitted
	}{
		{desc: "no active pods", pod: p1, others: func() []*v1.Pod { return grown }},
		{desc: "p1 joined: one looked up", pod: p2, others: func() []*v1.Pod { grown = append(grown, p1); return grown }, wantAsked: 1},
		{desc: "p2 joined: one more", pod: p3, others: func() []*v1.Pod { grown = append(grown, p2); return grown }, wantAsked: 1, want: "OutOfcpu"},
		{desc: "unchanged: none", pod: p3, others: func() []*v1.Pod { return grown }, want: "OutOfcpu"},
		{desc: "another array: all again", pod: p3, others: func() []*v1.Pod { return []*v1.Pod{p2} }, wantAsked: 1},
		{desc: "back to the first array: all again", pod: p3, others: func() []*v1.Pod { return grown }, wantAsked: 2, want: "OutOfcpu"},
		{desc: "the same array shorter: all again", pod: p3, others: func() []*v1.Pod { return grown[:1] }, wantAsked: 1},
	} {
		others := step.others()
		before := source.asked
		got := h.Admit(ctx, &lifecycle.PodAdmitAttributes{Pod: step.pod, OtherPods: others})
		if got.Reason != step.want || got.Admit != (step.want == "") {
			t.Errorf("%s: Admit = %v %q, want reason %q", step.desc, got.Admit, got.Reason, step.want)
		}
		if asked := source.asked - before; asked != step.wantAsked {
			t.Errorf("%s: %d active pods looked up, want %d", step.desc, asked, step.wantAsked)
		}
		if without := plain.Admit(context.Background(), &lifecycle.PodAdmitAttributes{Pod: step.pod, OtherPods: others}); without.Message != got.Message {
			t.Errorf("%s: with totals %q, without %q", step.desc, got.Message, without.Message)
		}
	}
}
