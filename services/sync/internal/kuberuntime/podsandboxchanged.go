package kuberuntime

import (
	"context"

	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// podSandboxChanged reports whether the pod needs a new sandbox, the attempt
// number to create it with (or of the current one), and the ID of the
// current sandbox. It matches the kubelet's PodSandboxChanged
// (pkg/kubelet/kuberuntime/util):
//   - no sandbox at all: create, attempt 0, no ID;
//   - more than one ready sandbox: reconcile by creating a new one;
//   - the newest sandbox is not ready (it died, or the node rebooted);
//   - the network namespace mode no longer matches hostNetwork: the old
//     sandbox cannot be reused, so no ID is returned;
//   - a pod-network sandbox reports a network status without an IP (CNI
//     setup was lost).
//
// Every re-creation bumps the attempt past the highest one seen, so the new
// sandbox's name never collides with an old one the runtime still holds.
// podStatus.SandboxStatuses must be newest first.
func podSandboxChanged(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus) (changed bool, attempt uint32, sandboxID string) {
	log := loggerFrom(ctx).WithLazy(zap.String("pod", pod.Namespace+"/"+pod.Name))
	if len(podStatus.SandboxStatuses) == 0 {
		log.Debug("no sandbox for pod, need to start a new one")
		return true, 0, ""
	}

	readySandboxCount := 0
	maxAttempt := uint32(0)
	for _, s := range podStatus.SandboxStatuses {
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			readySandboxCount++
		}
		maxAttempt = max(maxAttempt, s.GetMetadata().GetAttempt())
	}

	newest := podStatus.SandboxStatuses[0]
	switch {
	case readySandboxCount > 1:
		log.Debug("multiple sandboxes are ready for pod, need to reconcile them", zap.Int("ready", readySandboxCount))
		return true, maxAttempt + 1, newest.GetId()
	case newest.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY:
		log.Debug("no ready sandbox for pod, need to start a new one", zap.String("sandbox", newest.GetId()))
		return true, maxAttempt + 1, newest.GetId()
	case newest.GetLinux().GetNamespaces().GetOptions().GetNetwork() != networkNamespaceForPod(pod):
		log.Debug("sandbox network namespace mode changed, need to start a new one", zap.String("sandbox", newest.GetId()))
		return true, maxAttempt + 1, ""
	case !container.IsHostNetworkPod(pod) && newest.GetNetwork() != nil && newest.GetNetwork().GetIp() == "":
		log.Debug("sandbox for pod has no IP address, need to start a new one", zap.String("sandbox", newest.GetId()))
		return true, maxAttempt + 1, newest.GetId()
	}
	return false, maxAttempt, newest.GetId()
}

// networkNamespaceForPod returns the network namespace mode the pod's
// sandbox must have. Matches the kubelet's NetworkNamespaceForPod.
func networkNamespaceForPod(pod *v1.Pod) runtimeapi.NamespaceMode {
	if pod != nil && pod.Spec.HostNetwork {
		return runtimeapi.NamespaceMode_NODE
	}
	return runtimeapi.NamespaceMode_POD
}
