// Package source gathers pods from splitlet-sync's pod sources and merges
// them like the kubelet's config mux (pkg/kubelet/config: PodConfig and
// podStorage): a source reports its full set of pods (Set) or, when it
// knows what changed, only the changed pods (Merge, whose cost does not grow
// with the source's size), and the sync loop receives the differences as
// ADD, UPDATE, DELETE, REMOVE and RECONCILE updates tagged with the source.
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
//	api, _ := source.NewAPISource(ctx, st, node, cfg) // Set once, then Merge per change
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
	// HTTPSourceName is the static pods of a manifest URL (--manifest-url).
	HTTPSourceName = "http"
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
// Set and Merge never wait for the sync loop: the differences they compute
// are queued, in order, and a forwarding goroutine hands them to Updates.
// The sync loop itself publishes (a finished deletion makes the API source
// Merge a REMOVE), so a call that blocked on the channel only the sync loop
// reads would deadlock it.
type PodConfig struct {
	mu       sync.Mutex
	expected []string
	pods     map[string]map[types.UID]*v1.Pod
	seen     map[string]bool
	queue    []PodUpdate   // computed, not yet handed to updates; guarded by mu
	wake     chan struct{} // tells the forwarder the queue grew
	updates  chan PodUpdate
	// createdAt, when set, gives the creation time a pod had in a previous
	// run of sync (statuskeep), for a static pod seen again.
	createdAt func(types.UID) (metav1.Time, bool)
}

// SetCreationTimes gives the mux the creation times pods had in a previous
// run of sync, so that a static pod (which carries none) keeps its AGE
// across a restart instead of starting again from the restart. Call it
// before any source reports.
func (c *PodConfig) SetCreationTimes(createdAt func(types.UID) (metav1.Time, bool)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.createdAt = createdAt
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

// forward hands queued updates to the sync loop, oldest first. When the sync
// loop falls behind, adjacent queued updates with the same Op and Source are
// handed over as one, their pods in order, so a burst of Applies reaches
// HandlePodAdditions as a batch rather than one call per pod. The kubelet's
// mux sends them one by one; the handlers treat a batch as the same calls
// in sequence, so only the number of calls changes. Updates are never
// reordered, and an update of another Op or Source ends a batch.
func (c *PodConfig) forward() {
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.mu.Unlock()
			<-c.wake
			continue
		}
		u, n := coalesce(c.queue)
		clear(c.queue[:n])
		c.queue = c.queue[n:]
		c.mu.Unlock()
		c.updates <- u
	}
}

// coalesce returns the first update of queue merged with the adjacent ones
// of the same Op and Source, and how many queued updates it holds. The
// queued Pods slices are not modified: a new slice is built when there is
// more than one, since the handlers may sort what they receive.
func coalesce(queue []PodUpdate) (PodUpdate, int) {
	u := queue[0]
	n, total := 1, len(u.Pods)
	for n < len(queue) && queue[n].Op == u.Op && queue[n].Source == u.Source {
		total += len(queue[n].Pods)
		n++
	}
	if n == 1 {
		return u, 1
	}
	pods := make([]*v1.Pod, 0, total)
	for _, q := range queue[:n] {
		pods = append(pods, q.Pods...)
	}
	u.Pods = pods
	return u, n
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
// operation. Its cost grows with the size of the set; a source that knows
// what changed calls Merge instead.
func (c *PodConfig) Set(_ context.Context, source string, pods []*v1.Pod) {
	c.mu.Lock()
	c.seen[source] = true
	old := c.pods[source]
	next := make(map[types.UID]*v1.Pod, len(pods))
	var ch changes
	for _, p := range pods {
		next[p.UID] = ch.record(source, old[p.UID], p, c.createdAt)
	}
	for uid, p := range old {
		if _, ok := next[uid]; !ok {
			ch.removes = append(ch.removes, p)
		}
	}
	c.pods[source] = next
	c.queueLocked(source, &ch)
	c.mu.Unlock()
	c.wakeForwarder()
}

// Merge records a change to some of source's pods and leaves its other pods
// alone, so its cost grows with len(pods), not with the source's size. With
// op REMOVE the pods (matched by UID) leave the source; a pod it does not
// hold is ignored. With any other op each pod is added or replaces the
// source's pod of the same UID, and what the sync loop receives is decided
// by comparing the two exactly as Set does (ADD, UPDATE, DELETE or
// RECONCILE, or nothing for an unchanged pod). Merge does not count as the
// source's first report for SeenAllSources: only Set does. Matches
// podStorage.merge with the ADD, UPDATE, DELETE and REMOVE operations.
func (c *PodConfig) Merge(_ context.Context, source string, op Operation, pods []*v1.Pod) {
	c.mu.Lock()
	cur := c.pods[source]
	if cur == nil {
		cur = map[types.UID]*v1.Pod{}
		c.pods[source] = cur
	}
	var ch changes
	for _, p := range pods {
		prev, ok := cur[p.UID]
		if op == REMOVE {
			if ok {
				delete(cur, p.UID)
				ch.removes = append(ch.removes, prev)
			}
			continue
		}
		cur[p.UID] = ch.record(source, prev, p, c.createdAt)
	}
	c.queueLocked(source, &ch)
	c.mu.Unlock()
	c.wakeForwarder()
}

// knownCreation asks createdAt, when there is one, for uid's creation time.
func knownCreation(createdAt func(types.UID) (metav1.Time, bool), uid types.UID) (metav1.Time, bool) {
	if createdAt == nil {
		return metav1.Time{}, false
	}
	return createdAt(uid)
}

// changes gathers the pods of one Set or Merge by the update they go in.
type changes struct {
	adds, updates, deletes, removes, reconciles []*v1.Pod
}

// record compares a copy of p, tagged with source, with prev, the version
// the mux holds (nil if none), files it under the change it makes and
// returns the pod the mux keeps. Matches the kubelet's checkAndUpdatePod.
func (ch *changes) record(source string, prev, p *v1.Pod, createdAt func(types.UID) (metav1.Time, bool)) *v1.Pod {
	p = p.DeepCopy()
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[defaults.ConfigSourceAnnotationKey] = source
	// Static pods carry no creation time; a kubelet's mirror pod gets it
	// from the API server when the kubelet first sees the pod, so the first
	// time the mux sees a pod stands in for it (kubectl's AGE).
	if p.CreationTimestamp.IsZero() {
		if prev != nil {
			p.CreationTimestamp = prev.CreationTimestamp
		} else if t, ok := knownCreation(createdAt, p.UID); ok {
			p.CreationTimestamp = t
		} else {
			p.CreationTimestamp = metav1.NewTime(time.Now().Truncate(time.Second))
		}
	}
	if prev == nil {
		ch.adds = append(ch.adds, p)
		return p
	}
	if seen, ok := prev.Annotations[defaults.ConfigSeenAnnotationKey]; ok {
		p.Annotations[defaults.ConfigSeenAnnotationKey] = seen
	}
	switch {
	case podsDifferSemantically(prev, p):
		if p.DeletionTimestamp != nil && prev.DeletionTimestamp == nil {
			ch.deletes = append(ch.deletes, p)
		} else {
			ch.updates = append(ch.updates, p)
		}
		return p
	case !equality.Semantic.DeepEqual(prev.Status, p.Status):
		ch.reconciles = append(ch.reconciles, p)
		return p
	}
	return prev
}

// queueLocked queues ch's non-empty updates in the kubelet's order
// (podStorage.Merge: REMOVE, ADD, UPDATE, DELETE, RECONCILE). It runs in the
// critical section that computed them, so updates from concurrent calls
// reach the sync loop in the order the changes were recorded.
func (c *PodConfig) queueLocked(source string, ch *changes) {
	for _, u := range []PodUpdate{
		{Op: REMOVE, Pods: ch.removes}, {Op: ADD, Pods: ch.adds}, {Op: UPDATE, Pods: ch.updates},
		{Op: DELETE, Pods: ch.deletes}, {Op: RECONCILE, Pods: ch.reconciles},
	} {
		if len(u.Pods) == 0 {
			continue
		}
		u.Source = source
		c.queue = append(c.queue, u)
	}
}

// wakeForwarder tells the forwarder the queue grew, without waiting.
func (c *PodConfig) wakeForwarder() {
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
