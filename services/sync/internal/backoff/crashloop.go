package backoff

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// ErrCrashLoopBackOff is the reason a container is not restarted yet. Its
// text is the waiting reason the pod status shows, as the kubelet's
// kubecontainer.ErrCrashLoopBackOff.
var ErrCrashLoopBackOff = errors.New("CrashLoopBackOff")

// StableKey names a container of a pod in the crash-loop table:
// "<pod>_<namespace>_<uid>_<container>_<hash hex>". The spec hash is part
// of the key so that changing the container's image starts its back-off
// afresh. Matches the kubelet's GetStableKey.
func StableKey(pod *v1.Pod, c *v1.Container) string {
	hash := strconv.FormatUint(container.HashContainer(c), 16)
	return fmt.Sprintf("%s_%s_%s_%s_%s", pod.Name, pod.Namespace, pod.UID, c.Name, hash)
}

// FormatPod renders a pod for messages as the kubelet's format.Pod does:
// "<name>_<namespace>(<uid>)".
func FormatPod(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// CrashLoopMessage is the waiting message of a container in back-off:
// "back-off 40s restarting failed container=app pod=web_default(uid)".
func CrashLoopMessage(delay time.Duration, containerName string, pod *v1.Pod) string {
	return fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, containerName, FormatPod(pod))
}

// DoBackOff decides whether SyncPod must hold off restarting spec. With no
// exited instance of the container there is nothing to back off from. The
// latest exited instance's FinishedAt is the event: while it is younger
// than the container's delay, DoBackOff returns true, the CrashLoopMessage
// and ErrCrashLoopBackOff; otherwise it advances the delay (Next) and lets
// the restart go ahead. Matches the kubelet's
// kubeGenericRuntimeManager.doBackOff. podStatus must be newest first.
func (b *Backoff) DoBackOff(pod *v1.Pod, spec *v1.Container, podStatus *container.PodStatus) (bool, string, error) {
	var exited *container.Status
	if podStatus != nil {
		for _, s := range podStatus.ContainerStatuses {
			if s.Name == spec.Name && s.State == container.ContainerStateExited {
				exited = s
				break
			}
		}
	}
	if exited == nil {
		return false, "", nil
	}
	key := StableKey(pod, spec)
	if b.IsInBackOffSince(key, exited.FinishedAt) {
		return true, CrashLoopMessage(b.Get(key), spec.Name, pod), ErrCrashLoopBackOff
	}
	b.Next(key, exited.FinishedAt)
	return false, "", nil
}
