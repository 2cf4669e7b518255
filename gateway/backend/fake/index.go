package fake

// PodUIDLabel is the label the kubelet puts on every sandbox and container
// it creates (kubelettypes.KubernetesPodUIDLabel). The kubelet's
// getSandboxIDByPodUID and getPodContainerStatuses, and sync's GetPodStatus
// after them, list by it for every pod they sync, so the fake indexes both
// sandboxes and containers by its value: such a list touches one pod's
// objects, not every object on the node.
const PodUIDLabel = "io.kubernetes.pod.uid"

// podIndex maps a PodUIDLabel value to the objects, by ID, carrying the
// label with that value. Objects without the label are not in it. Labels
// are fixed when an object is created, so an object's entry never moves.
type podIndex[T any] map[string]map[string]*T

func (ix podIndex[T]) add(labels map[string]string, id string, v *T) {
	uid, ok := labels[PodUIDLabel]
	if !ok {
		return
	}
	byID := ix[uid]
	if byID == nil {
		byID = make(map[string]*T, 1)
		ix[uid] = byID
	}
	byID[id] = v
}

func (ix podIndex[T]) remove(labels map[string]string, id string) {
	uid, ok := labels[PodUIDLabel]
	if !ok {
		return
	}
	delete(ix[uid], id)
	if len(ix[uid]) == 0 {
		delete(ix, uid) // UIDs are never reused: do not keep one entry per pod ever seen
	}
}

// lookup returns the objects a label selector can match when it names
// PodUIDLabel (a superset: the other selector pairs still apply), and
// false when the selector does not narrow by pod.
func (ix podIndex[T]) lookup(selector map[string]string) (map[string]*T, bool) {
	uid, ok := selector[PodUIDLabel]
	if !ok {
		return nil, false
	}
	return ix[uid], true
}

// The store's mutators keep every index in step with the ID maps: the
// per-sandbox container map and the pod UID indexes. Name reservations stay
// with the callers, which release them on their own failure paths.

func (s *store) addSandbox(sb *sandbox) {
	s.sandboxes[sb.id] = sb
	s.sandboxesByPod.add(sb.config.GetLabels(), sb.id, sb)
}

func (s *store) deleteSandbox(sb *sandbox) {
	delete(s.sandboxes, sb.id)
	s.sandboxesByPod.remove(sb.config.GetLabels(), sb.id)
}

func (s *store) addContainer(c *container) {
	s.containers[c.id] = c
	c.sb.containers[c.id] = c
	s.containersByPod.add(c.config.GetLabels(), c.id, c)
}

func (s *store) deleteContainer(c *container) {
	delete(s.containers, c.id)
	delete(c.sb.containers, c.id)
	s.containersByPod.remove(c.config.GetLabels(), c.id)
}
