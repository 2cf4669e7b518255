package plugin

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	pluginv1 "github.com/splitlet/splitlet/proto/splitlet/admission/plugin/v1"
)

// The plugin's side of active sets (ActiveSet in plugin.proto): the SDK
// keeps the last few generations of the active pods the host sent, so that
// the host need send only changes, and hands every Admit the whole set as
// before: a plugin's Request does not show how the set travelled.

// keptGenerations is how many generations a plugin holds. The host sends
// changes against the newest set the plugin acknowledged, so one is enough
// for calls made one after the other; a few more let concurrent calls that
// each changed the set find their base.
const keptGenerations = 4

// activeSets holds the sets of the host's current session. Safe for
// concurrent use; the zero value is ready.
type activeSets struct {
	mu      sync.Mutex
	session string
	sets    map[uint64][]*v1.Pod
}

// activePods returns the active set of a request whose active_set is set,
// decoding new pods with decode, and keeps it. It fails with
// activeSetUnknown when the request's base is not held, and with an error
// to be answered as InvalidArgument when the request is malformed.
func (a *activeSets) activePods(in *pluginv1.AdmitRequest, decode func([]byte) (*v1.Pod, error)) ([]*v1.Pod, error) {
	set := in.GetActiveSet()
	if set.GetGeneration() == 0 {
		return nil, fmt.Errorf("active_set.generation: 0; generations start at 1")
	}
	if set.GetBaseGeneration() == 0 {
		// The whole set.
		if len(set.GetChangedPods()) > 0 || len(set.GetRemovedUids()) > 0 {
			return nil, fmt.Errorf("active_set: changes without a base generation")
		}
		pods := make([]*v1.Pod, len(in.GetActivePods()))
		for i, b := range in.GetActivePods() {
			p, err := decode(b)
			if err != nil {
				return nil, fmt.Errorf("decode active pod %d: %w", i, err)
			}
			pods[i] = p
		}
		a.put(set.GetSession(), set.GetGeneration(), pods)
		return pods, nil
	}
	if len(in.GetActivePods()) > 0 {
		return nil, fmt.Errorf("active_pods: set beside active_set.base_generation %d", set.GetBaseGeneration())
	}
	base, ok := a.get(set.GetSession(), set.GetBaseGeneration())
	if !ok {
		return nil, activeSetUnknown(set)
	}
	if set.GetGeneration() == set.GetBaseGeneration() {
		if len(set.GetChangedPods()) > 0 || len(set.GetRemovedUids()) > 0 {
			return nil, fmt.Errorf("active_set: changes without a new generation (%d)", set.GetGeneration())
		}
		return base, nil
	}
	pods, err := applyChanges(base, set, decode)
	if err != nil {
		return nil, err
	}
	a.put(set.GetSession(), set.GetGeneration(), pods)
	return pods, nil
}

// applyChanges is base with set's changes: a changed pod takes the place
// of the base's pod of its UID or comes last, removed pods go.
func applyChanges(base []*v1.Pod, set *pluginv1.ActiveSet, decode func([]byte) (*v1.Pod, error)) ([]*v1.Pod, error) {
	changed := make(map[types.UID]*v1.Pod, len(set.GetChangedPods()))
	order := make([]*v1.Pod, 0, len(set.GetChangedPods()))
	for i, b := range set.GetChangedPods() {
		p, err := decode(b)
		if err != nil {
			return nil, fmt.Errorf("decode active_set.changed_pods[%d]: %w", i, err)
		}
		if p.UID == "" {
			return nil, fmt.Errorf("active_set.changed_pods[%d] (%s/%s): no metadata.uid", i, p.Namespace, p.Name)
		}
		if _, dup := changed[p.UID]; dup {
			return nil, fmt.Errorf("active_set.changed_pods[%d]: uid %s twice", i, p.UID)
		}
		changed[p.UID] = p
		order = append(order, p)
	}
	removed := make(map[types.UID]bool, len(set.GetRemovedUids()))
	for _, uid := range set.GetRemovedUids() {
		if _, ok := changed[types.UID(uid)]; ok {
			return nil, fmt.Errorf("active_set: uid %s both changed and removed", uid)
		}
		removed[types.UID(uid)] = false
	}

	out := make([]*v1.Pod, 0, len(base)+len(changed))
	for _, p := range base {
		if _, ok := removed[p.UID]; ok {
			removed[p.UID] = true
			continue
		}
		if c, ok := changed[p.UID]; ok {
			out = append(out, c)
			delete(changed, p.UID)
			continue
		}
		out = append(out, p)
	}
	for uid, found := range removed {
		if !found {
			return nil, fmt.Errorf("active_set.removed_uids: %s is not in base generation %d", uid, set.GetBaseGeneration())
		}
	}
	for _, p := range order {
		if _, added := changed[p.UID]; added {
			out = append(out, p)
		}
	}
	return out, nil
}

func (a *activeSets) get(session string, gen uint64) ([]*v1.Pod, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if session != a.session {
		return nil, false
	}
	pods, ok := a.sets[gen]
	return pods, ok
}

// put keeps pods as generation gen of session, dropping the sets of any
// other session and the oldest generations beyond keptGenerations.
func (a *activeSets) put(session string, gen uint64, pods []*v1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if session != a.session || a.sets == nil {
		a.session = session
		a.sets = make(map[uint64][]*v1.Pod, keptGenerations+1)
	}
	a.sets[gen] = pods
	for len(a.sets) > keptGenerations {
		oldest := gen
		for g := range a.sets {
			oldest = min(oldest, g)
		}
		delete(a.sets, oldest)
	}
}
