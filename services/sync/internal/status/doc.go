// Package status turns the runtime's view of a pod (container.PodStatus)
// into the pod's API status (v1.PodStatus), as the kubelet's
// generateAPIPodStatus and status manager do: phase, the kubelet-owned
// conditions, container / init container / ephemeral container statuses,
// pod and host IPs, start time and QoS class.
//
// Everything here is pure: what the kubelet reads from its other managers
// (probe results, the reasons SyncPod recorded for containers it could not
// start, the previous status) arrives in Inputs, so every rule is
// table-tested and the same code serves the pod worker, the API-server
// status writer and the PodService.
//
// Usage sketch (inside a pod worker's sync):
//
//	apiStatus := status.GenerateAPIPodStatus(pod, podStatus, status.Inputs{
//		Readiness:     readiness,      // probe results per container ID
//		Startup:       startup,
//		Reasons:       reasonCache,    // CrashLoopBackOff, ErrImagePull, ...
//		OldStatus:     cached,         // last generated status, if any
//		HostIPs:       nodeIPs,
//		PodIsTerminal: terminal,
//	})
//	if err := status.CheckContainerStateTransition(cached, &apiStatus, &pod.Spec); err != nil { ... }
//	if status.NeedsUpdate(cached, &apiStatus) { /* store; write to the API */ }
//
// The generated status already carries what the kubelet's status manager
// adds when it caches a status (updateStatusInternal): lastTransitionTime of
// each condition kept while its status is unchanged, startTime kept once
// set, and timestamps normalized to whole seconds as the API server stores
// them, so comparing it with a status read back from the API is meaningful.
package status
