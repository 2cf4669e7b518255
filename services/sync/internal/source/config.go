// Package source gathers pods from splitlet-sync's pod sources and merges
// them like the kubelet's config mux (pkg/kubelet/config: PodConfig and
// podStorage): every source reports its full set of pods, and the sync loop
// receives the differences as ADD, UPDATE, DELETE, REMOVE and RECONCILE
// updates tagged with the source.
//
// Sources:
//   - FileSource: a manifest directory of static pods, polled;
//   - APISource: the pods applied through the PodService API, persisted in
//     the store.
//
// Usage sketch:
//
//	cfg := source.NewPodConfig(source.FileSourceName, source.APISourceName)
//	go source.NewFileSource(dir, node, 2*time.Second, cfg).Run(ctx)
//	api, _ := source.NewAPISource(ctx, st, node, cfg)
//	for u := range cfg.Updates() { /* HandlePodAdditions, ... */ }
package source

import (
	"context"
	"maps"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/splitlet/splitlet/services/sync/internal/defaults"
)

// Source names, as the kubelet writes them in the config.source annotation.
const (
	FileSourceName = "file"
	// APISourceName is the PodService API. It plays the part of the
	// kubelet's API server source, hence its name.
	APISourceName = "api"
)

// Operation is what a PodUpdate asks of the sync loop. The values match the
// kubelet's kubetypes.PodOperation.
type Operation int

const (
	// ADD: pods new to the node.
	ADD Operation = iota
	// UPDATE: pods whose spec, labels or annotations changed.
	UPDATE
	// DELETE: pods that got a deletion timestamp; they terminate gracefully
	// and stay known until they are removed.
	DELETE
	// REMOVE: pods that left their source; they are killed and forgotten.
	REMOVE
	// RECONCILE: pods whose status alone changed.
	RECONCILE
)

func (o Operation) String() string {
	switch o {
	case ADD:
		return "ADD"
	case UPDATE:
		return "UPDATE"
	case DELETE:
		return "DELETE"
	case REMOVE:
		return "REMOVE"
	case RECONCILE:
		return "RECONCILE"
	}
	return "UNKNOWN"
}

// PodUpdate is one batch of changes from one source.
type PodUpdate struct {
	Pods   []*v1.Pod
	Op     Operation
	Source string
}

// PodConfig merges the sources' pod sets. It is safe for concurrent use.
//
// Set never waits for the sync loop: the differences it computes are queued,
// in order, and a forwarding goroutine hands them to Updates. The sync loop
// itself calls Set (a finished deletion makes the API source publish its
// smaller set), so a Set that blocked on the channel only the sync loop reads
// would deadlock it.
type PodConfig struct {
	mu       sync.Mutex
	expected []string
	pods     map[string]map[types.UID]*v1.Pod
	seen     map[string]bool
	queue    []PodUpdate   // computed, not yet handed to updates; guarded by mu
	wake     chan struct{} // tells the forwarder the queue grew
	updates  chan PodUpdate
}

// NewPodConfig returns a mux expecting the named sources; SeenAllSources
// turns true once each has reported at least once. The mux lives as long as
// the process: its forwarding goroutine never ends.
func NewPodConfig(sources ...string) *PodConfig {
	c := &PodConfig{
		expected: sources,
		pods:     map[string]map[types.UID]*v1.Pod{},
		seen:     map[string]bool{},
		wake:     make(chan struct{}, 1),
		updates:  make(chan PodUpdate),
	}
	go c.forward()
	return c
}

// forward hands queued updates to the sync loop, oldest first.
func (c *PodConfig) forward() {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.mu.Unlock()
			<-c.wake
			continue
		}
		u := c.queue[0]
		c.queue[0] = PodUpdate{}
		c.queue = c.queue[1:]
		c.mu.Unlock()
		c.updates <- u
	}
}

// Updates is the merged stream the sync loop reads.
func (c *PodConfig) Updates() <-chan PodUpdate { return c.updates }

// SeenAllSources reports whether every expected source has reported its
// pods. Housekeeping must not remove runtime pods before that: a pod whose
// source has not spoken yet is not an orphan. Matches the kubelet's
// PodConfig.SeenAllSources.
func (c *PodConfig) SeenAllSources() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.expected {
		if !c.seen[s] {
			return false
		}
	}
	return true
}

// Set records the complete set of pods of source and sends the differences
// with the previous set, in the kubelet's order (REMOVE, ADD, UPDATE, DELETE,
// RECONCILE). Each pod gets the config.source annotation. It never blocks on
// the sync loop (see PodConfig). Matches podStorage.merge with a SET
// operation.
func (c *PodConfig) Set(_ context.Context, source string, pods []*v1.Pod) {
	c.mu.Lock()
	c.seen[source] = true
	old := c.pods[source]
	next := make(map[types.UID]*v1.Pod, len(pods))
	var adds, updates, deletes, removes, reconciles []*v1.Pod
	for _, p := range pods {
		p = p.DeepCopy()
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[defaults.ConfigSourceAnnotationKey] = source
		prev, ok := old[p.UID]
		// Static pods carry no creation time; a kubelet's mirror pod gets it
		// from the API server when the kubelet first sees the pod, so the
		// first time the mux sees a pod stands in for it (kubectl's AGE).
		if p.CreationTimestamp.IsZero() {
			if ok {
				p.CreationTimestamp = prev.CreationTimestamp
			} else {
				p.CreationTimestamp = metav1.NewTime(time.Now().Truncate(time.Second))
			}
		}
		if !ok {
			next[p.UID] = p
			adds = append(adds, p)
			continue
		}
		if seen, ok := prev.Annotations[defaults.ConfigSeenAnnotationKey]; ok {
			p.Annotations[defaults.ConfigSeenAnnotationKey] = seen
		}
		switch {
		case podsDifferSemantically(prev, p):
			next[p.UID] = p
			if p.DeletionTimestamp != nil && prev.DeletionTimestamp == nil {
				deletes = append(deletes, p)
			} else {
				updates = append(updates, p)
			}
		case !equality.Semantic.DeepEqual(prev.Status, p.Status):
			next[p.UID] = p
			reconciles = append(reconciles, p)
		default:
			next[p.UID] = prev
		}
	}
	for uid, p := range old {
		if _, ok := next[uid]; !ok {
			removes = append(removes, p)
		}
	}
	c.pods[source] = next
	// Queued in the same critical section that computed them, so updates
	// from concurrent calls reach the sync loop in the order the sets were
	// recorded.
	for _, u := range []PodUpdate{
		{Op: REMOVE, Pods: removes}, {Op: ADD, Pods: adds}, {Op: UPDATE, Pods: updates},
		{Op: DELETE, Pods: deletes}, {Op: RECONCILE, Pods: reconciles},
	} {
		if len(u.Pods) == 0 {
			continue
		}
		u.Source = source
		c.queue = append(c.queue, u)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default: // the forwarder is already awake
	}
}

// podsDifferSemantically reports a change the pod worker must act on: spec,
// labels, annotations (config.seen aside) or deletion. Matches the kubelet's
// podsDifferSemantically plus the deletion fields checkAndUpdatePod compares.
func podsDifferSemantically(a, b *v1.Pod) bool {
	ann := func(p *v1.Pod) map[string]string {
		m := maps.Clone(p.Annotations)
		delete(m, defaults.ConfigSeenAnnotationKey)
		return m
	}
	return !equality.Semantic.DeepEqual(a.Spec, b.Spec) ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(ann(a), ann(b)) ||
		!equality.Semantic.DeepEqual(a.DeletionTimestamp, b.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds)
}
