package predicate

import (
	"context"
	"maps"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// ActiveTotals carries the summaries of an active set, and what they add
// up to, from one admission to the next of a sequence whose active set only
// grows: the admissions of one AdmitPods call, where each admitted pod
// joins the set the next pod is judged beside (the kubelet's
// HandlePodAdditions). Each admission then looks up and adds only the pods
// the set gained, instead of walking a node's thousands of pods per pod.
//
// It recognises a grown set by the slice: otherPods must extend the slice
// of the admission before (the same backing array, longer or as long), as
// appending to it in place does; the caller must not change the elements
// of a slice it passed. Any other slice starts the totals afresh. It is
// safe for concurrent use.
type ActiveTotals struct {
	mu    sync.Mutex
	pods  []*v1.Pod
	infos []*ActivePodInfo
	used  resources
}

type activeTotalsKey struct{}

// WithActiveTotals returns ctx carrying t for the predicate admissions
// made with it.
func WithActiveTotals(ctx context.Context, t *ActiveTotals) context.Context {
	return context.WithValue(ctx, activeTotalsKey{}, t)
}

// summarize returns otherPods' summaries and the sum of what they hold,
// through ctx's ActiveTotals when it has one.
func (h *Handler) summarize(ctx context.Context, otherPods []*v1.Pod) ([]*ActivePodInfo, resources) {
	t, _ := ctx.Value(activeTotalsKey{}).(*ActiveTotals)
	if t == nil {
		infos := h.activePodInfos(otherPods)
		var used resources
		for _, info := range infos {
			used.addResources(&info.requests)
		}
		return infos, used
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !extends(otherPods, t.pods) {
		t.pods, t.infos, t.used = nil, nil, resources{}
	}
	for _, info := range h.activePodInfos(otherPods[len(t.pods):]) {
		t.infos = append(t.infos, info)
		t.used.addResources(&info.requests)
	}
	t.pods = otherPods
	used := t.used
	// The next admission adds to the map; this one's sum must not move.
	used.scalar = maps.Clone(used.scalar)
	return t.infos[:len(otherPods):len(otherPods)], used
}

// extends says whether pods is prefix grown in place: the same first
// element's address, at least as long.
func extends(pods, prefix []*v1.Pod) bool {
	return len(pods) >= len(prefix) && (len(prefix) == 0 || &pods[0] == &prefix[0])
}
