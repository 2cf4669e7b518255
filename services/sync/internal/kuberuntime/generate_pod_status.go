package kuberuntime

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// errEventWithoutSandbox is returned for an event that names no pod.
var errEventWithoutSandbox = errors.New("container event carries no pod sandbox status")

// GeneratePodStatus builds the pod's status from a container event, without
// a runtime call: the event's sandbox and the statuses of its containers,
// which the runtime takes when it sends the event (containerd >= 1.7 and the
// fake send every container of the sandbox). The result shows that one
// sandbox only; older sandboxes of the pod and their containers are absent.
// Matches the kubelet's kubeGenericRuntimeManager.GeneratePodStatus.
func (m *Manager) GeneratePodStatus(ctx context.Context, ev *runtimeapi.ContainerEventResponse) (*container.PodStatus, error) {
	sb := ev.GetPodSandboxStatus()
	md := sb.GetMetadata()
	if sb == nil || md.GetUid() == "" {
		return nil, errEventWithoutSandbox
	}
	ps := &container.PodStatus{
		ID:              types.UID(md.GetUid()),
		Name:            md.GetName(),
		Namespace:       md.GetNamespace(),
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{sb},
	}
	runtimeName, err := m.RuntimeName(ctx)
	if err != nil {
		return nil, err
	}
	for _, cs := range ev.GetContainersStatuses() {
		ps.ContainerStatuses = append(ps.ContainerStatuses, m.withActuated(ps.ID, convertToKubeContainerStatus(ctx, runtimeName, cs)))
	}
	ps.SortNewestFirst()
	ps.IPs = sandboxIPs(sb)
	return ps, nil
}

// sandboxIPs returns the pod's IPs from its sandbox's status, primary first.
// Matches the kubelet's determinePodSandboxIPs.
func sandboxIPs(sb *runtimeapi.PodSandboxStatus) []string {
	net := sb.GetNetwork()
	if net == nil || net.GetIp() == "" {
		return nil
	}
	ips := []string{net.GetIp()}
	for _, ip := range net.GetAdditionalIps() {
		ips = append(ips, ip.GetIp())
	}
	return ips
}
