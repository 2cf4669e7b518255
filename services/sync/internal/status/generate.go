package status

import (
	"net"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/splitlet/splitlet/internal/qos"
	"github.com/splitlet/splitlet/services/sync/internal/container"
)

// GenerateAPIPodStatus returns the pod's API status given the runtime's view
// of it. It matches the kubelet's generateAPIPodStatus (with
// convertStatusToAPIStatus and the prober manager's UpdatePodStatus),
// followed by what the status manager's updateStatusInternal adds before
// caching a status:
//
//   - pod IPs from the runtime, ordered by the node's IP family; QoS class;
//   - container, init container and ephemeral container statuses
//     (convertToAPIContainerStatuses), with started and ready from the
//     probe results;
//   - the phase (getPhase); a phase never leaves Succeeded or Failed once
//     the previous status or the API shows it, and keeps its reason and
//     message while unchanged; Inputs.Eviction forces Failed;
//   - conditions: those not owned by the kubelet are kept from pod.Status,
//     DisruptionTarget from the previous status, then
//     PodReadyToStartContainers, Initialized, Ready, ContainersReady and
//     PodScheduled are generated, and AllContainersRestarting for a pod with
//     a RestartAllContainers rule;
//   - hostIP(s) from Inputs.HostIPs, which a host-network pod also takes as
//     its pod IPs;
//   - lastTransitionTime kept from the previous status while a condition's
//     status is unchanged, the clock's now otherwise; startTime kept once
//     set; timestamps truncated to seconds and termination messages
//     bounded (normalizeStatus).
//
// One deliberate difference: probe results are applied before the phase is
// computed, so a sidecar's fresh started flag counts at once; the kubelet
// computes the phase from the previous flag and catches up one sync later.
//
// pod is not modified. A nil podStatus is treated as a pod the runtime has
// nothing of.
func GenerateAPIPodStatus(pod *v1.Pod, podStatus *container.PodStatus, in Inputs) v1.PodStatus {
	if podStatus == nil {
		podStatus = &container.PodStatus{}
	}
	var oldPodStatus v1.PodStatus
	if in.OldStatus != nil {
		in.OldStatus.DeepCopyInto(&oldPodStatus)
	} else {
		pod.Status.DeepCopyInto(&oldPodStatus)
	}

	s := convertStatusToAPIStatus(pod, podStatus, &oldPodStatus, &in)
	if in.Probes != nil {
		in.Probes.UpdatePodStatus(pod, s)
	} else {
		ApplyProbeResults(pod, s, nil, nil)
	}

	all := append(append([]v1.ContainerStatus{}, s.ContainerStatuses...), s.InitContainerStatuses...)
	s.Phase = getPhase(pod, all, in.PodIsTerminal, hasAnyActiveRegularContainerStarted(&pod.Spec, podStatus))

	// A terminal phase already recorded (by us or in the API) wins over a
	// non-terminal one computed now: containers are not restarted in a
	// terminal pod, whatever the runtime shows transiently.
	if !isTerminal(s.Phase) {
		switch {
		case isTerminal(oldPodStatus.Phase):
			s.Phase = oldPodStatus.Phase
		case isTerminal(pod.Status.Phase):
			s.Phase = pod.Status.Phase
		}
	}
	if s.Phase == oldPodStatus.Phase {
		s.Reason, s.Message = oldPodStatus.Reason, oldPodStatus.Message
		if s.Reason == "" {
			s.Reason = pod.Status.Reason
		}
		if s.Message == "" {
			s.Message = pod.Status.Message
		}
	}
	if in.Eviction != nil {
		s.Phase, s.Reason, s.Message = v1.PodFailed, in.Eviction.Reason, in.Eviction.Message
	}
	if isTerminal(pod.Status.Phase) && s.Phase != pod.Status.Phase {
		// Illegal transition out of the API's terminal phase.
		s.Phase = pod.Status.Phase
	}

	s.Conditions = make([]v1.PodCondition, 0, len(pod.Status.Conditions)+6)
	for _, c := range pod.Status.Conditions {
		if !podConditionByKubelet(c.Type) {
			s.Conditions = append(s.Conditions, *c.DeepCopy())
		}
	}
	// DisruptionTarget is set once, by whoever evicts; it is carried over,
	// not regenerated.
	if c := findCondition(oldPodStatus.Conditions, v1.DisruptionTarget); c != nil {
		s.Conditions = replaceOrAppendCondition(s.Conditions, c)
	}
	s.Conditions = append(s.Conditions, generatePodReadyToStartContainersCondition(pod, podStatus, in.PodSandboxChanged))
	allStatuses := append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...)
	s.Conditions = append(s.Conditions,
		generatePodInitializedCondition(pod, &oldPodStatus, allStatuses, s.Phase),
		generatePodReadyCondition(pod, s.Conditions, allStatuses, s.Phase),
		generateContainersReadyCondition(pod, allStatuses, s.Phase),
		v1.PodCondition{Type: v1.PodScheduled, ObservedGeneration: pod.Generation, Status: v1.ConditionTrue},
	)
	if container.AllContainersCouldRestart(&pod.Spec) {
		s.Conditions = append(s.Conditions, generateAllContainersRestartingCondition(pod, podStatus, &oldPodStatus, s.Phase))
	}
	s.Conditions = append(s.Conditions, generatePodResizeConditions(pod, podStatus, &in)...)

	setHostIPs(pod, s, in.HostIPs)
	s.ObservedGeneration = pod.Generation

	// The status manager's part (updateStatusInternal).
	now := in.clock().Now()
	for _, t := range []v1.PodConditionType{
		v1.ContainersReady, v1.PodReady, v1.PodInitialized, v1.PodReadyToStartContainers,
		v1.PodScheduled, v1.DisruptionTarget, v1.AllContainersRestarting, v1.PodResizePending, v1.PodResizeInProgress,
	} {
		updateLastTransitionTime(s, &oldPodStatus, t, now)
	}
	if oldPodStatus.StartTime != nil && !oldPodStatus.StartTime.IsZero() {
		s.StartTime = oldPodStatus.StartTime.DeepCopy()
	} else {
		start := metav1.NewTime(now)
		s.StartTime = &start
	}
	normalizeStatus(pod, s)
	return *s
}

// podIPsOrOld keeps a pod's IPs once its sandboxes have stopped: the
// runtime reports none for a stopped sandbox, and a Completed pod would
// lose its IP. Matches the kubelet's GenericPLEG.getPodIPs, which keeps the
// older cached status' IPs when the new status has none and no sandbox is
// ready; the old API status stands in for the cache here, so the IPs also
// survive a restart of sync.
func podIPsOrOld(podStatus *container.PodStatus, old *v1.PodStatus) []string {
	if len(podStatus.IPs) != 0 || old == nil || len(old.PodIPs) == 0 {
		return podStatus.IPs
	}
	for _, sb := range podStatus.SandboxStatuses {
		if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			return podStatus.IPs
		}
	}
	ips := make([]string, len(old.PodIPs))
	for i, ip := range old.PodIPs {
		ips[i] = ip.IP
	}
	return ips
}

// convertStatusToAPIStatus matches the kubelet's function of the same name:
// pod IPs, QoS class, and the three lists of container statuses.
func convertStatusToAPIStatus(pod *v1.Pod, podStatus *container.PodStatus, old *v1.PodStatus, in *Inputs) *v1.PodStatus {
	var s v1.PodStatus
	for _, ip := range sortPodIPs(podIPsOrOld(podStatus, old), in.HostIPs) {
		s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
	s.QOSClass = qos.GetPodQOS(pod)

	hasInit := len(pod.Spec.InitContainers) > 0
	restarting := container.ShouldAllContainersRestart(pod, podStatus, old)
	rro := &rroSupport{ask: in.SupportsRecursiveReadOnly, pod: pod}
	s.ContainerStatuses = convertToAPIContainerStatuses(pod, podStatus, old.ContainerStatuses,
		pod.Spec.Containers, hasInit, false, restarting, in.Reasons, rro)
	s.InitContainerStatuses = convertToAPIContainerStatuses(pod, podStatus, old.InitContainerStatuses,
		pod.Spec.InitContainers, hasInit, true, restarting, in.Reasons, rro)
	if len(pod.Spec.EphemeralContainers) > 0 {
		ephemeral := make([]v1.Container, 0, len(pod.Spec.EphemeralContainers))
		for i := range pod.Spec.EphemeralContainers {
			ephemeral = append(ephemeral, v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
		}
		s.EphemeralContainerStatuses = convertToAPIContainerStatuses(pod, podStatus, old.EphemeralContainerStatuses,
			ephemeral, hasInit, false, restarting, in.Reasons, rro)
	}
	return &s
}

// sortPodIPs keeps the runtime's first IP of the node's primary family, then
// its first IP of the other family. Matches the kubelet's sortPodIPs, the
// node's family being that of hostIPs[0] (IPv4 when unknown). Unparsable IPs
// are dropped; IPs are re-rendered in canonical form.
func sortPodIPs(podIPs, hostIPs []string) []string {
	primaryV4 := true
	if len(hostIPs) > 0 {
		if ip := net.ParseIP(hostIPs[0]); ip != nil && ip.To4() == nil {
			primaryV4 = false
		}
	}
	pick := func(v4 bool) (string, bool) {
		for _, s := range podIPs {
			ip := net.ParseIP(s)
			if ip != nil && (ip.To4() != nil) == v4 {
				return ip.String(), true
			}
		}
		return "", false
	}
	ips := make([]string, 0, 2)
	if ip, ok := pick(primaryV4); ok {
		ips = append(ips, ip)
	}
	if ip, ok := pick(!primaryV4); ok {
		ips = append(ips, ip)
	}
	return ips
}

// setHostIPs sets hostIP(s) and a host-network pod's pod IPs, as the end of
// the kubelet's generateAPIPodStatus does: pod IPs, once set, only gain the
// node's secondary family.
func setHostIPs(pod *v1.Pod, s *v1.PodStatus, hostIPs []string) {
	if len(hostIPs) == 0 {
		return
	}
	s.HostIP = hostIPs[0]
	s.HostIPs = []v1.HostIP{{IP: hostIPs[0]}}
	if len(hostIPs) > 1 {
		s.HostIPs = append(s.HostIPs, v1.HostIP{IP: hostIPs[1]})
	}
	if !pod.Spec.HostNetwork {
		return
	}
	if s.PodIP == "" {
		s.PodIP = hostIPs[0]
		s.PodIPs = []v1.PodIP{{IP: s.PodIP}}
	}
	if len(hostIPs) > 1 && len(s.PodIPs) == 1 && isIPv4(s.PodIPs[0].IP) != isIPv4(hostIPs[1]) {
		s.PodIPs = append(s.PodIPs, v1.PodIP{IP: hostIPs[1]})
	}
}

func isIPv4(s string) bool {
	ip := net.ParseIP(s)
	return ip != nil && ip.To4() != nil
}

func isTerminal(p v1.PodPhase) bool {
	return p == v1.PodSucceeded || p == v1.PodFailed
}
