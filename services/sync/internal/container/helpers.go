package container

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// HashContainer returns the hash of the parts of a container spec whose
// change requires the running container to be replaced. SyncPod records it
// on every container it creates; computePodActions restarts a container
// whose recorded hash differs from its spec's.
//
// Matches the kubelet's kubecontainer.HashContainer (v1.31 and later), value
// for value: FNV-32a over the kubelet's DeepHashObject rendering (go-spew's
// "%#v") of the JSON of {"image", "name"} only. Since v1.31 the kubelet hashes
// just those two fields, because image is the only container field an update
// may change (the rest are immutable in the API) and hashing the whole spec
// restarted every container whenever a kubelet upgrade added a defaulted
// field. Producing the same value keeps containers created by a kubelet and by
// sync interchangeable, and a sync upgrade from restarting healthy containers.
func HashContainer(c *v1.Container) uint64 {
	// encoding/json sorts map keys, so the bytes are canonical.
	fields, _ := json.Marshal(map[string]string{
		"name":  c.Name,
		"image": c.Image,
	})
	h := fnv.New32a()
	_, _ = h.Write(spewByteSlice(fields))
	return uint64(h.Sum32())
}

// spewByteSlice renders b exactly as go-spew's formatter renders a []byte
// with "%#v" (the form the kubelet hashes): the type in parentheses, then the
// elements in decimal, space separated, in brackets. Written out here so that
// the hash needs no dependency on go-spew.
func spewByteSlice(b []byte) []byte {
	out := make([]byte, 0, len("([]uint8)[]")+4*len(b))
	out = append(out, "([]uint8)["...)
	for i, c := range b {
		if i > 0 {
			out = append(out, ' ')
		}
		out = strconv.AppendUint(out, uint64(c), 10)
	}
	return append(out, ']')
}

// ShouldContainerBeRestarted reports whether container, which is not
// running, should be (re)started given the restart policies and the
// container's latest status. Matches the kubelet's
// kubecontainer.ShouldContainerBeRestarted:
//   - a pod being deleted starts nothing;
//   - a container never seen (or garbage-collected) is started;
//   - a running container is not started again;
//   - created and unknown containers are always restarted: created means the
//     start failed after the create, unknown may be half-dead;
//   - an exited container restarts as its effective policy says
//     (ContainerShouldRestart: its restartPolicyRules, then its own
//     restartPolicy, then the pod's), the ContainerRestartRules path the
//     kubelet v1.36 takes by default.
//
// Back-off is not considered here: SyncPod checks it when it starts the
// container, as the kubelet does.
func ShouldContainerBeRestarted(container *v1.Container, pod *v1.Pod, podStatus *PodStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	status := podStatus.FindContainerStatusByName(container.Name)
	if status == nil {
		return true
	}
	switch status.State {
	case ContainerStateRunning:
		return false
	case ContainerStateUnknown, ContainerStateCreated:
		return true
	}
	return ContainerShouldRestart(container, &pod.Spec, int32(status.ExitCode))
}

// IsHostNetworkPod reports whether the pod uses the node's network
// namespace. Matches the kubelet's kubecontainer.IsHostNetworkPod.
func IsHostNetworkPod(pod *v1.Pod) bool {
	return pod.Spec.HostNetwork
}

// IsRestartableInitContainer reports whether an init container is a sidecar:
// an init container with restartPolicy Always, which is started in order
// with the other init containers but then kept running beside the regular
// containers. Matches the kubelet's podutil.IsRestartableInitContainer.
func IsRestartableInitContainer(initContainer *v1.Container) bool {
	if initContainer == nil || initContainer.RestartPolicy == nil {
		return false
	}
	return *initContainer.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// HasRestartableInitContainer reports whether the pod has any sidecar.
// Matches the kubelet's types.HasRestartableInitContainer.
func HasRestartableInitContainer(pod *v1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}

// SameResources says whether two containers' requests and limits are the
// same quantities (claims aside): whether a resize has changed them.
func SameResources(a, b *v1.ResourceRequirements) bool {
	return sameQuantities(a.Requests, b.Requests) && sameQuantities(a.Limits, b.Limits)
}

// sameQuantities compares two lists quantity by quantity (1000m is 1), as
// equality.Semantic does, without its reflection: every status of every
// pod asks.
func sameQuantities(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if other, ok := b[name]; !ok || q.Cmp(other) != 0 {
			return false
		}
	}
	return true
}
